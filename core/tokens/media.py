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
import zlib

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
    quick = _png_size(part.data) or _jpeg_size(part.data)
    if quick is not None:
        return quick
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


# The two kinds of image agent logs hold most (screenshots, photos) are read here without
# Pillow, whose import costs ~0.07 s: more than a resumed count of a grown session takes. Only a
# header that is plainly well-formed is read so; anything else goes to Pillow, as before.
_PNG = b"\x89PNG\r\n\x1a\n"
_PNG_MODES = {(1, 0), (2, 0), (4, 0), (8, 0), (16, 0), (8, 2), (16, 2), (1, 3), (2, 3), (4, 3), (8, 3)}
_PNG_MODES |= {(8, 4), (16, 4), (8, 6), (16, 6)}
_JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_MAX_PIXELS = 89_478_485  # Pillow's decompression-bomb warning: such an image goes to Pillow


def _decoded(data: str, chars: int) -> bytes:
    head = data[: chars - chars % 4]
    try:
        return base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return b""


def _png_size(data: str) -> tuple[int, int] | None:
    """A PNG's IHDR: 13 bytes, a valid CRC, a colour type and depth PNG defines."""
    if not data.startswith("iVBORw0KGgo"):
        return None
    raw = _decoded(data, 44)
    if len(raw) < 33 or raw[:8] != _PNG or raw[8:16] != b"\x00\x00\x00\rIHDR":
        return None
    body = raw[16:29]
    if zlib.crc32(raw[12:29]) != int.from_bytes(raw[29:33], "big"):
        return None
    w, h = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big")
    if (body[8], body[9]) not in _PNG_MODES or body[10] or body[11] or body[12] > 1:
        return None
    return (w, h) if w > 0 and h > 0 and w * h <= _MAX_PIXELS else None


def _jpeg_size(data: str) -> tuple[int, int] | None:
    """A baseline or progressive JPEG's frame header, found by walking the markers before it."""
    if not data.startswith("/9j/"):
        return None
    raw = _decoded(data, _HEAD_CHARS)
    i = 2
    while i + 4 <= len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker == 0xFF:  # fill bytes
            i += 1
            continue
        if marker < 0xC0:  # no marker Pillow knows: what it makes of the file is its to say
            return None
        if 0xD0 <= marker <= 0xD8:  # restart markers and the start of the image: no length
            i += 2
            continue
        if marker in (0xD9, 0xDA):  # the image ends, or its data starts, before a frame header
            return None
        length = int.from_bytes(raw[i + 2 : i + 4], "big")
        if length < 2:
            return None
        if marker in _JPEG_SOF:
            if length < 8 or i + 9 > len(raw):
                return None
            h, w = int.from_bytes(raw[i + 5 : i + 7], "big"), int.from_bytes(raw[i + 7 : i + 9], "big")
            return (w, h) if w > 0 and h > 0 and w * h <= _MAX_PIXELS else None
        i += 2 + length
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
