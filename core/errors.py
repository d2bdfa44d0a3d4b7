"""The one exception tree of ctxfold.

Core raises these and never prints or exits; the CLI maps them to exit codes in one place
(``cli/errors.py``: :class:`UsageError` → 2, everything else → 1).

::

    CtxfoldError
    ├── UsageError                 bad option values, unknown names ("did you mean")
    ├── InputError                 a transcript file cannot be read as asked
    │   ├── EmptyInputError        nothing but blank lines
    │   ├── UnknownFormatError     no reader recognises the first lines
    │   └── LineError              one line is bad: names file, line number and the problem
    ├── TokenizerError             encoding data missing or failing its pinned sha256
    ├── ConfigError                a config or profile file is unreadable
    ├── OutputError                an output file cannot be written
    ├── ProviderError              a summarizer call failed (network, status, unusable answer)
    │   └── MissingKeyError        a provider that needs an API key has none
    ├── WindowTooSmallError        even a fully compacted request does not fit the window
    ├── NoShrinkError              a compaction pass would not make the request 10 % smaller
    └── ChangedPrefixError         the part of a file a state file's summary covers has changed
"""

from __future__ import annotations

from pathlib import Path


class CtxfoldError(Exception):
    """Base of every error ctxfold raises on purpose."""


class UsageError(CtxfoldError):
    """The caller asked for something that does not exist or does not make sense."""


class InputError(CtxfoldError):
    """A transcript cannot be read."""

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.reason = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class EmptyInputError(InputError):
    """The file holds no JSON lines at all."""


class UnknownFormatError(InputError):
    """No registered reader recognises the file."""


class LineError(InputError):
    """One line of a JSONL file is bad.

    ``line`` is 1-based. A reader raises it without a path; the loader fills the path in.
    """

    def __init__(self, message: str, line: int, path: str | Path | None = None) -> None:
        self.line = line
        super().__init__(message, path)
        where = f"{self.path}:{line}" if self.path else f"line {line}"
        self.args = (f"{where}: {message}",)

    def __str__(self) -> str:
        return str(self.args[0])

    def with_path(self, path: str | Path) -> LineError:
        return type(self)(self.reason, self.line, path)


class TokenizerError(CtxfoldError):
    """A tokenizer could not be built offline."""


class ConfigError(CtxfoldError):
    """A configuration or profile file is unreadable or invalid."""


class OutputError(CtxfoldError):
    """An output file cannot be written."""


class ChangedPrefixError(CtxfoldError):
    """The part of the input that a state file's summary covers has changed since."""


class ProviderError(CtxfoldError):
    """A summarizer call failed: network, timeout, HTTP status, unusable response."""


class MissingKeyError(ProviderError):
    """A provider that needs an API key has none."""

    def __init__(self, provider: str, env_var: str) -> None:
        self.provider = provider
        self.env_var = env_var
        super().__init__(
            f"{provider}: no API key: set {env_var} or pass --api-key (api_key= from Python), "
            "or use --provider offline for a summary made without a model"
        )


class WindowTooSmallError(CtxfoldError):
    """Even a fully compacted request (system prompt, tools, summary) does not fit."""


class NoShrinkError(CtxfoldError):
    """A compaction pass would not make the request at least 10 % smaller."""
