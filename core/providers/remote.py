"""What every model-backed summarizer shares: key lookup, the fitted prompt, the output
budget, and turning SDK failures into :class:`ProviderError` messages with no secret in them.

The SDKs are imported inside ``_send`` only, so importing ctxfold (and ``ctxfold --help``)
never pays for them. Retries and timeouts are the SDK's own (``max_retries``, ``timeout``):
they already honour ``retry-after`` and back off exponentially.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from ctxfold.errors import CtxfoldError, MissingKeyError, ProviderError, UsageError
from ctxfold.providers.base import SummaryRequest, SummaryResult
from ctxfold.providers.carry import complete
from ctxfold.providers.redact import redact
from ctxfold.providers.render import Prompt, ToolResults, build_prompt
from ctxfold.tokens.models import lookup, resolve

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2


class RemoteSummarizer:
    """Subclasses set ``provider``, ``key_env`` (None: key optional) and implement ``_send``."""

    provider: ClassVar[str] = "remote"
    key_env: ClassVar[str | None] = None
    default_model: ClassVar[str | None] = None

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        tool_results: ToolResults | str | None = None,
        window: int | None = None,
    ) -> None:
        model = model or self.default_model
        if not model:
            raise UsageError(f"provider {self.provider!r} needs a model: write '{self.provider}:MODEL'")
        if timeout <= 0 or max_retries < 0:
            raise UsageError("timeout must be > 0 seconds and max_retries >= 0")
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.tool_results = ToolResults.parse(tool_results)
        resolved = resolve(model, window=window)
        self.window: int | None = resolved.window
        self.tokenizer = resolved.tokenizer
        info = lookup(model)
        self.max_output = info.max_output if info else None
        self.notes: list[str] = []  # passed on as warnings with every result
        if info is None and not window:
            self.notes.append(
                f"{self.provider}:{model}: unknown model, assuming a {resolved.window:,}-token window "
                "for the summarizer's input (set the summarizer window to change it)"
            )
        self.__key = api_key or None

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}(model={self.model!r}{where})"

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    def api_key(self) -> str | None:
        """The explicit key, else the SDK's environment variable; missing and required: error."""
        key = self.__key or (os.environ.get(self.key_env) if self.key_env else None) or None
        if key is None and self.key_env:
            raise MissingKeyError(self.provider, self.key_env)
        return key

    def _secrets(self) -> list[str | None]:
        return [self.__key, os.environ.get(self.key_env) if self.key_env else None]

    def max_tokens(self, request: SummaryRequest) -> int:
        """The summary's output budget, never above what the model can write."""
        budget = max(1, request.budget_tokens)
        return min(budget, self.max_output) if self.max_output else budget

    def prompt(self, request: SummaryRequest) -> Prompt:
        return build_prompt(
            request,
            window=self.window or 128_000,
            tokenizer=self.tokenizer,
            tool_results=self.tool_results,
            max_output=self.max_tokens(request),
        )

    def __call__(self, request: SummaryRequest) -> SummaryResult:
        key = self.api_key()
        prompt = self.prompt(request)
        failure: str | None = None
        try:
            text, usage = self._send(prompt, self.max_tokens(request), key)
        except CtxfoldError as err:
            failure = str(err)
        except Exception as err:  # the SDK's errors, and whatever a garbage response makes it raise
            failure = describe(err, self.timeout)
        if failure is not None:  # raised out here so the SDK's error (it holds the request) is not kept
            raise ProviderError(redact(f"{self.label}: {failure}", self._secrets()))
        if not text or not text.strip():
            raise ProviderError(f"{self.label}: the model returned an empty summary")
        notes = list(self.notes)
        if prompt.carry is not None:  # checked against the facts it was given: no second call
            text, added = complete(text.strip(), prompt.carry)
            if added:
                notes.append(
                    f"{self.label}: the summary left out {added} of the user's rules or requests; "
                    "ctxfold appended them verbatim"
                )
        return SummaryResult(
            text.strip(),
            self.provider,
            self.model,
            usage=usage,
            warnings=notes,
            dropped=prompt.dropped,
        )

    def _send(self, prompt: Prompt, max_tokens: int, key: str | None) -> tuple[str, dict[str, int]]:
        raise NotImplementedError


def describe(err: BaseException, timeout: float) -> str:
    """A one-line reason: HTTP status and the server's message, a timeout, a connection failure."""
    name = type(err).__name__
    status = getattr(err, "status_code", None)
    message = " ".join(str(getattr(err, "message", None) or err).split())
    if len(message) > 300:
        message = message[:299] + "…"
    if "Timeout" in name:
        return f"timed out after {timeout:g} s ({name})"
    if status is not None:
        return f"HTTP {status} ({name}): {message}"
    if "Connection" in name:
        return f"cannot connect{_to(err)} ({name}): {message}"
    return f"{name}: {message}" if message else name


def _to(err: BaseException) -> str:
    """The URL the error says it could not reach (" to http://host:port/path"), when it holds one."""
    try:
        url = err.request.url  # type: ignore[attr-defined]
    except Exception:  # no request (httpx raises RuntimeError when none was set)
        return ""
    return f" to {url.copy_with(query=None)}" if hasattr(url, "copy_with") else f" to {url}"


def usage_of(obj: Any, input_field: str, output_field: str) -> dict[str, int]:
    """``{"input_tokens", "output_tokens"}`` from an SDK usage object (missing fields: left out)."""
    usage = getattr(obj, "usage", None)
    out: dict[str, int] = {}
    for ours, theirs in (("input_tokens", input_field), ("output_tokens", output_field)):
        value = getattr(usage, theirs, None)
        if isinstance(value, int):
            out[ours] = value
    return out
