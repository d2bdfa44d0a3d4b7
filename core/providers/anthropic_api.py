"""``anthropic:MODEL``: the Messages API through the official ``anthropic`` SDK."""

from __future__ import annotations

from typing import Any

from ctxfold.providers.remote import RemoteSummarizer, usage_of
from ctxfold.providers.render import Prompt


class AnthropicSummarizer(RemoteSummarizer):
    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    default_model = "claude-haiku-4-5"

    def _send(self, prompt: Prompt, max_tokens: int, key: str | None) -> tuple[str, dict[str, int]]:
        import anthropic

        client = anthropic.Anthropic(
            api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
        )
        with client:
            response: Any = client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=prompt.system,
                messages=[{"role": "user", "content": prompt.user}],
            )
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise TypeError(f"unexpected response ({type(response).__name__}), not a Messages API reply")
        text = "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", None) == "text")
        return text, usage_of(response, "input_tokens", "output_tokens")
