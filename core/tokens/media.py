"""Tokens of images and documents, by each provider's published rule.

Dimensions are read from the image header with Pillow (which parses only the header on
``open``), decoding just enough of the base64 payload; the byte length of base64 says
nothing about pixels. When no dimensions can be had, the provider's largest per-image cost
is used, so an unknown image never makes the estimate smaller.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re

from ctxfold.transcript.model import MediaPart

_HEAD_CHARS = 64 * 1024  # enough for PNG/GIF/WebP headers and JPEG SOF after typical EXIF

ANTHROPIC_MAX_TOKENS = 1_600
OPENAI_UNKNOWN_TOKENS = 85 + 170 * 6  # 768×1536 after scaling: the common worst case
GOOGLE_UNKNOWN_TOKENS = 258 * 4
GOOGLE_TILE_TOKENS = 258
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?!s)")
PDF_TOKENS_PER_PAGE = 1_500  # Anthropic documents 1,500–3,000 text tokens per page; images extra


def dimensions(part: MediaPart) -> tuple[int, int] | None:
    """(width, height) from the part, else from the image header, else None."""
    if part.width and part.height:
        return part.width, part.height
    if not part.data or not part.mime_type.startswith("image/"):
        return None
    from PIL import Image, UnidentifiedImageError

    for chars in (_HEAD_CHARS, len(part.data)):
        head = part.data[: chars - chars % 4] if chars < len(part.data) else part.data
        try:
            raw = base64.b64decode(head + "=" * (-len(head) % 4), validate=False)
            with Image.open(io.BytesIO(raw)) as img:
                return int(img.width), int(img.height)
        except (binascii.Error, UnidentifiedImageError, OSError, ValueError, SyntaxError):
            if chars >= len(part.data):
                return None
    return None


def anthropic_image_tokens(w: int, h: int) -> int:
    """Anthropic: scale so the long edge ≤ 1568 px and the image ≤ ~1,600 tokens, then w·h/750.

    (Anthropic's table lists 1092×1092 as the largest square sent unresized: ≈1.19 MP.)
    """
    scale = min(1.0, 1568 / max(w, h), math.sqrt(ANTHROPIC_MAX_TOKENS * 750 / (w * h)))
    w2, h2 = int(w * scale), int(h * scale)
    return max(1, math.ceil(w2 * h2 / 750))


def openai_image_tokens(w: int, h: int, detail: str = "high") -> int:
    """OpenAI (GPT-4o family): fit in 2048², shortest side to 768, then 85 + 170 per 512-px tile."""
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(w, h))
    w2, h2 = w * scale, h * scale
    short = min(w2, h2)
    if short > 768:
        w2, h2 = w2 * 768 / short, h2 * 768 / short
    tiles = math.ceil(w2 / 512) * math.ceil(h2 / 512)
    return 85 + 170 * tiles


def google_image_tokens(w: int, h: int) -> int:
    """Gemini: 258 tokens when both sides ≤ 384 px, else 258 per 768×768 tile."""
    if w <= 384 and h <= 384:
        return GOOGLE_TILE_TOKENS
    return GOOGLE_TILE_TOKENS * math.ceil(w / 768) * math.ceil(h / 768)


def image_tokens(part: MediaPart, provider: str) -> int:
    dims = dimensions(part)
    if provider == "openai":
        detail = str(part.extra.get("detail", "high")) if part.extra else "high"
        return openai_image_tokens(*dims, detail=detail) if dims else OPENAI_UNKNOWN_TOKENS
    if provider == "google":
        return google_image_tokens(*dims) if dims else GOOGLE_UNKNOWN_TOKENS
    return anthropic_image_tokens(*dims) if dims else ANTHROPIC_MAX_TOKENS


def pdf_pages(part: MediaPart) -> int:
    if not part.data:
        return 1
    try:
        raw = base64.b64decode(part.data + "=" * (-len(part.data) % 4), validate=False)
    except (binascii.Error, ValueError):
        return 1
    return max(1, len(_PDF_PAGE.findall(raw)))
