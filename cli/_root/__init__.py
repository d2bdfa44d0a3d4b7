"""ctxfold: keep LLM-agent conversations inside the model's context window.

The library lives in :mod:`ctxfold.core`; the command line in :mod:`ctxfold.cli`.
"""

__version__ = "0.1.0"
