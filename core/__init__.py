"""ctxfold: keep LLM-agent conversations inside the model's context window.

The library is this package; the command line is :mod:`ctxfold.cli`.
"""

__version__ = "0.1.0"
