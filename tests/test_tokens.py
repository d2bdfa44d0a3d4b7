"""Tokenizers offline, image rules, model registry and per-part counting."""

from __future__ import annotations

import base64
import gzip
import io
import os
from pathlib import Path

import pytest
from PIL import Image

from ctxfold.errors import TokenizerError, UsageError
from ctxfold.tokens import encodings, media
from ctxfold.tokens.counting import TOOL_REFERENCE_TOKENS, Counter
from ctxfold.tokens.models import lookup, resolve
from ctxfold.tokens.tokenizers import HeuristicTokenizer, get_tokenizer
from ctxfold.transcript.model import (
    MediaPart,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)


def test_encodings_build_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.load

    def no_download(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken tried to fetch its BPE file")

    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_download)
    encodings._cache.clear()
    enc = encodings.get_encoding("o200k_base")
    # Known o200k ids for this text (tiktoken's own test vectors use "hello world" → [24912, 2375]).
    assert enc.encode("hello world") == [24912, 2375]
    assert encodings.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    import tiktoken

    assert tiktoken.get_encoding("o200k_base") is enc  # later get_encoding calls stay offline too
    assert encodings.get_encoding("o200k_base") is enc  # cached per process


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_ranks_are_read_as_tiktoken_reads_them(name: str) -> None:
    import base64

    raw = gzip.decompress(encodings.data_file(name).read_bytes())
    expected = {}
    for line in raw.splitlines():  # as tiktoken.load.load_tiktoken_bpe parses the file
        if line:
            token, rank = line.split()
            expected[base64.b64decode(token)] = int(rank)
    assert encodings.read_ranks(name) == expected


def test_the_ranks_kept_in_the_cache_folder_are_the_ranks_read(tmp_path: Path) -> None:
    """tiktoken is built from a copy of the ranks kept in the cache folder (a third of the load
    time); the copy equals a fresh read, and a damaged one is rewritten, never used."""
    read = encodings.read_ranks("cl100k_base")
    assert encodings.cached_ranks("cl100k_base") == read  # written
    (copy,) = (Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "bpe").glob("cl100k_base-*.ranks")
    assert encodings.cached_ranks("cl100k_base") == read  # read back
    data = bytearray(copy.read_bytes())
    data[-3] ^= 1  # a rank changed: the body no longer matches its sha256
    copy.write_bytes(bytes(data))
    assert encodings.cached_ranks("cl100k_base") == read
    assert copy.read_bytes() != bytes(data)  # and the copy was written again


def test_tampered_data_is_refused(tmp_path: Path) -> None:
    real = encodings.data_file("cl100k_base").read_bytes()
    raw = gzip.decompress(real).replace(b"IQ== 0", b"IQ== 1", 1)
    bad = tmp_path / "cl100k_base.tiktoken.gz"
    bad.write_bytes(gzip.compress(raw))
    with pytest.raises(TokenizerError, match="does not match the value tiktoken pins"):
        encodings.read_ranks("cl100k_base", bad)
    with pytest.raises(TokenizerError, match="no offline data"):
        encodings.read_ranks("p50k_base")


def test_tiktoken_cache_dir_is_private() -> None:
    import os

    encodings._keep_tiktoken_offline()
    assert not os.environ["TIKTOKEN_CACHE_DIR"].startswith("/tmp/data-gym-cache")
    assert "ctxfold" in os.environ["TIKTOKEN_CACHE_DIR"]


def test_heuristic_is_utf8_bytes_over_four() -> None:
    h = HeuristicTokenizer()
    assert h.count("abcdefgh") == 2
    assert h.count("ééé") == 1  # 6 bytes, as Go's len() counts
    assert h.count_batch(["abcd", ""]) == [1, 0]


def test_batch_equals_single_counts() -> None:
    tok = get_tokenizer("o200k")
    texts = ["hello world", "def f(x):\n    return x * 2\n", "日本語のテキスト", "", '{"a": [1, 2, 3]}'] * 3
    assert tok.count_batch(texts) == [tok.count(t) for t in texts]


def test_unknown_tokenizer_suggests() -> None:
    with pytest.raises(UsageError, match="did you mean 'o200k'"):
        get_tokenizer("o200")


def _png(w: int, h: int, fmt: str = "PNG") -> str:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (200, 10, 10)).save(buf, fmt)
    return base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize(
    ("w", "h", "fmt"), [(640, 480, "PNG"), (3000, 1000, "JPEG"), (17, 33, "GIF"), (800, 600, "WEBP")]
)
def test_dimensions_come_from_the_header(w: int, h: int, fmt: str) -> None:
    part = MediaPart(f"image/{fmt.lower()}", data=_png(w, h, fmt))
    assert media.dimensions(part) == (w, h)


def test_image_rules() -> None:
    # Anthropic docs: 1000×1000 ≈ 1334 tokens; 1092×1092 ≈ 1590 (max size without resizing)
    assert media.anthropic_image_tokens(1000, 1000) == 1334
    assert 1580 <= media.anthropic_image_tokens(1092, 1092) <= 1600
    assert media.anthropic_image_tokens(4000, 4000) <= 1600  # resized to ≤ 1.15 MP first
    # OpenAI docs: 1024×1024 high → 765; 2048×4096 → 1105; low detail → 85
    assert media.openai_image_tokens(1024, 1024) == 765
    assert media.openai_image_tokens(2048, 4096) == 1105
    assert media.openai_image_tokens(4096, 8192, detail="low") == 85
    assert media.google_image_tokens(300, 300) == 258
    assert media.google_image_tokens(1000, 1000) == 258 * 4


def test_unreadable_image_costs_the_maximum_not_zero() -> None:
    part = MediaPart("image/png", data=base64.b64encode(b"not an image at all").decode())
    assert media.dimensions(part) is None
    assert media.image_tokens(part, "anthropic") == media.ANTHROPIC_MAX_TOKENS


def test_model_registry_prefix_and_routing() -> None:
    assert lookup("claude-sonnet-4-5-20250929").family == "claude-sonnet-4"  # type: ignore[union-attr]
    assert lookup("openrouter/meta-llama/llama-4-maverick").family == "llama-4-maverick"  # type: ignore[union-attr]
    assert lookup("gpt-4o-mini-2024-07-18").provider == "openai"  # type: ignore[union-attr]
    assert lookup("gpt-4-0613").tokenizer == "cl100k"  # type: ignore[union-attr]
    assert lookup("my-local-model") is None


def test_window_precedence_and_unknown_warning() -> None:
    assert resolve("gpt-5-codex").window == 400_000
    assert resolve("gpt-5-codex", recorded_window=272_000).window_source == "recorded in the log"
    conf = {"gpt-5-codex": {"window": 300_000}}
    assert resolve("gpt-5-codex", recorded_window=272_000, config_models=conf).window == 300_000
    assert resolve("gpt-5-codex", window=1000, config_models=conf).window == 1000
    unknown = resolve("my-local-model")
    assert unknown.window == 128_000 and unknown.window_source == "default"
    assert "unknown model 'my-local-model'" in unknown.warnings[0]
    assert "(did you mean 'gpt-5'?)" in resolve("gtp-5").warnings[0]  # one typo from a family
    typo = resolve("claude-sonet-4-5")  # a typo that still matches the generic Claude family
    assert "did you mean 'claude-sonnet-4'" in typo.warnings[0] and "generic Claude model" in typo.warnings[0]
    assert not resolve("claude-opus-4-7").warnings and not resolve("claude").warnings


def test_counting_splits_by_category() -> None:
    tok = get_tokenizer("o200k")
    counter = Counter(tok, "openai")
    msgs = [
        Message("user", (TextPart("please read a.py"),)),
        Message("assistant", (ToolCallPart("c1", "read_file", {"path": "a.py"}),)),
        Message("tool", (ToolResultPart("c1", (TextPart("print('hi')"),), name="read_file"),)),
        Message("user", (MediaPart("image/png", data=_png(1024, 1024)),)),
    ]
    counts = counter.count_messages(msgs)
    assert counts[0].by_category == {"user": 3 + tok.count("please read a.py")}
    assert counts[1].by_category["tool_calls"] == 3 + tok.count('read_file {"path":"a.py"}')
    assert counts[2].by_category["tool_results"] == 3 + 3 + tok.count("print('hi')")
    assert counts[3].by_category["media"] == 765
    assert all(c.total == sum(c.by_category.values()) for c in counts)


def test_a_system_prompt_restated_is_counted_once_and_a_changed_one_again() -> None:
    """Codex restates its system prompt at every turn: the counter counts it once, yet a
    changed prompt (or one back again) is never answered with the count kept before."""
    seen: list[str] = []

    class Spy(HeuristicTokenizer):
        def count_batch(self, texts):  # type: ignore[no-untyped-def]
            seen.extend(texts)
            return super().count_batch(texts)

    counter = Counter(Spy(), "openai")
    per = counter.framing.per_message
    a, b = ("You are a coding agent.", "Be brief."), ("You are a reviewer.",)
    for system in (a, a, b, a, list(a)):
        assert counter.count_system(system) == sum(len(t) // 4 for t in system) + per
    assert seen == [*a, *b, *a]  # counted when it changed, not when it was restated
    assert counter.count_system(()) == 0


def test_thinking_counts_for_anthropic_only() -> None:
    tok = get_tokenizer("o200k")
    msg = Message("assistant", (ThinkingPart("let me think about this"), ThinkingPart(signature="s" * 1000)))
    anth = Counter(tok, "anthropic").count_messages([msg])[0]
    assert anth.thinking == tok.count("let me think about this") + 340
    assert Counter(tok, "openai").count_messages([msg])[0].thinking == 0


def test_summarized_thinking_counts_at_least_its_signature() -> None:
    """Claude 4 shows a summary of its thinking; the signature carries the whole of it."""
    tok = get_tokenizer("o200k")
    counter = Counter(tok, "anthropic")
    short = "weighing two options"
    summarized = Message("assistant", (ThinkingPart(short, signature="s" * 1000), TextPart("done")))
    (c,) = counter.count_messages([summarized])
    assert c.thinking == 220 and c.total == sum(c.by_category.values())
    assert c.by_category["assistant"] == 220 + tok.count("done") + counter.framing.per_message
    full = " ".join(["a long line of thinking written out in full"] * 100)  # longer than 0.22 × 1000
    (c,) = counter.count_messages([Message("assistant", (ThinkingPart(full, signature="s" * 1000),))])
    assert c.thinking == tok.count(full)


def test_tool_reference_counts_as_the_definition_it_loads() -> None:
    tok = get_tokenizer("o200k")
    counter = Counter(tok, "anthropic")
    refs = tuple(OpaquePart({"type": "tool_reference", "tool_name": n}, type="tool_reference") for n in "AB")
    (c,) = counter.count_messages([Message("user", (ToolResultPart("t1", refs),))])
    f = counter.framing
    assert c.by_category["tool_results"] == 2 * TOOL_REFERENCE_TOKENS + f.per_tool_result
    assert c.total == c.by_category["tool_results"] + f.per_message


def test_tool_definitions_are_counted_as_serialized() -> None:
    tok = get_tokenizer("o200k")
    tools = [
        ToolDef("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    ]
    openai = Counter(tok, "openai").count_tools(tools)
    anthropic = Counter(tok, "anthropic").count_tools(tools)
    assert openai > 20
    assert anthropic > openai + 300  # Anthropic's tool-use system prompt
    assert Counter(tok, "openai").count_tools([]) == 0


@pytest.mark.parametrize("seed", range(3))
def test_png_and_jpeg_headers_read_without_pillow_match_pillow(seed: int) -> None:
    """The header fast path gives Pillow's size on every image it reads, and leaves the rest
    (a damaged header, a truncated file) to Pillow."""
    import random

    rng = random.Random(seed)
    for _ in range(40):
        w, h = rng.randint(1, 2500), rng.randint(1, 2500)
        fmt = rng.choice(["PNG", "JPEG"])
        mode = rng.choice(["RGB", "L"] if fmt == "JPEG" else ["RGB", "RGBA", "L", "P", "1", "LA", "I;16"])
        options = (
            rng.choice([{}, {"progressive": True}, {"exif": Image.Exif().tobytes()}]) if fmt == "JPEG" else {}
        )
        buf = io.BytesIO()
        Image.new(mode, (w, h)).save(buf, fmt, **options)
        data = base64.b64encode(buf.getvalue()).decode()
        assert (media._png_size(data) or media._jpeg_size(data)) == (w, h), (fmt, mode, options)
        raw = bytearray(buf.getvalue())
        raw[20 if fmt == "PNG" else 3] ^= 0xFF  # a damaged header: what Pillow makes of it, as before
        damaged = MediaPart(f"image/{fmt.lower()}", data=base64.b64encode(bytes(raw)).decode())
        try:
            with Image.open(io.BytesIO(bytes(raw))) as img:
                expected: tuple[int, int] | None = (img.width, img.height)
        except Exception:
            expected = None
        assert media.dimensions(damaged) == expected, (fmt, mode, options)
