"""``openai:MODEL`` (Chat Completions), ``openai-responses:MODEL`` (Responses API) and
``openai-compatible:MODEL`` (any server speaking Chat Completions: Ollama, vLLM, LM Studio,
OpenRouter), all through the official ``openai`` SDK.

Chat Completions is the default because every compatible server implements it; the Responses
API is chosen by the provider name ``openai-responses`` (or ``api="responses"``). OpenAI's own
endpoint gets ``max_completion_tokens`` (the only limit its reasoning models accept);
compatible servers get the older ``max_tokens`` that they all understand. A compatible server
gets a key only when one is passed explicitly: ``OPENAI_API_KEY`` is never sent to a
third-party host, and without a key no ``Authorization`` header is sent at all.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ctxfold.errors import UsageError
from ctxfold.providers.remote import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, RemoteSummarizer, usage_of
from ctxfold.providers.render import Prompt, ToolResults

APIS = ("chat", "responses")


class OpenAISummarizer(RemoteSummarizer):
    provider = "openai"
    key_env: ClassVar[str | None] = "OPENAI_API_KEY"
    default_model: ClassVar[str | None] = "gpt-4.1-mini"
    limit_field: ClassVar[str] = "max_completion_tokens"

    def __init__(
        self,
        model: str | None = None,
        *,
        api: str = "chat",
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        tool_results: ToolResults | str | None = None,
        window: int | None = None,
    ) -> None:
        if api not in APIS:
            raise UsageError(f"unknown OpenAI API {api!r}: use one of {', '.join(APIS)}")
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            tool_results=tool_results,
            window=window,
        )
        self.api = api

    def _send(self, prompt: Prompt, max_tokens: int, key: str | None) -> tuple[str, dict[str, int]]:
        import openai

        # Without a key the client gets a placeholder (so it does not fall back to
        # OPENAI_API_KEY) and every request omits the Authorization header.
        client = openai.OpenAI(
            api_key=key or "no-key",
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        omit_auth: dict[str, str | openai.Omit] | None = None if key else {"Authorization": openai.Omit()}
        with client:
            if self.api == "responses":
                response: Any = client.responses.create(
                    model=self.model,
                    instructions=prompt.system,
                    input=prompt.user,
                    max_output_tokens=max_tokens,
                    store=False,
                    extra_headers=omit_auth,
                )
                text = getattr(response, "output_text", None)
                if not isinstance(text, str):
                    raise TypeError(
                        f"unexpected response ({type(response).__name__}), not a Responses API reply"
                    )
                return text, usage_of(response, "input_tokens", "output_tokens")
            new_style = self.limit_field == "max_completion_tokens"
            response = client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": prompt.system},
                    {"role": "user", "content": prompt.user},
                ],
                max_completion_tokens=max_tokens if new_style else openai.omit,
                max_tokens=openai.omit if new_style else max_tokens,
                extra_headers=omit_auth,
            )
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise TypeError(f"unexpected response ({type(response).__name__}), not a chat completion")
        content = getattr(choices[0].message, "content", None)
        return content or "", usage_of(response, "prompt_tokens", "completion_tokens")


class OpenAIResponsesSummarizer(OpenAISummarizer):
    provider = "openai-responses"

    def __init__(self, model: str | None = None, **options: Any) -> None:
        options.setdefault("api", "responses")
        super().__init__(model, **options)


class OpenAICompatibleSummarizer(OpenAISummarizer):
    provider = "openai-compatible"
    key_env = None  # optional, and never read from OPENAI_API_KEY
    default_model = None
    limit_field = "max_tokens"

    def __init__(self, model: str | None = None, **options: Any) -> None:
        if not options.get("base_url"):
            raise UsageError(
                "openai-compatible needs a base URL (e.g. http://localhost:11434/v1 for Ollama, "
                "http://localhost:8000/v1 for vLLM, https://openrouter.ai/api/v1)"
            )
        super().__init__(model, **options)
