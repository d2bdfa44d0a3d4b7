"""The harness lab: real agent harnesses against scripted model servers (see conftest.py)."""
