"""Attachments in a message's content: what they are, what they cost, which the Observer sees.

LangChain carries an image or a file as a content block in one of three shapes: its own
(``{"type": "image" | "file", "base64" | "url" | "file_id", "mime_type", "extras"}``),
OpenAI's (``{"type": "image_url", "image_url": {"url", "detail"}}``) and Anthropic's
(``{"type": "image" | "document", "source": {"type": "base64" | "url", "media_type",
"data" | "url"}}``). `attachment` reads any of them into an `Attachment`.

**Tokens** (Mastra's image-aware estimate): a caller's own estimate wins
(``extras={"token_estimate": N}``, for a pipeline that stored a reference and not the bytes);
else an image whose bytes are at hand is measured from its header (PNG, JPEG, GIF, WebP) and
priced by OpenAI's tile rule (scaled into 2048 px, then its short side into 768 px: 170 a
512 px tile, plus 85; ``detail: "low"`` is 85); an image of unknown size costs 4 tiles (765).
A file that is not an image counts its description, never its bytes.

**Observation** (Mastra's ``observeAttachments``): the Observer's transcript names each
attachment (``[Image #1: receipt.png]``), and the attachments an `AttachmentFilter` admits are
sent to it as content blocks of its prompt, so it can observe what they show.

Examples:
    >>> found = attachment({"type": "image", "url": "https://x.test/a/cat.png"})
    >>> found.kind, found.label, found.tokens
    ('Image', 'cat.png', 765.0)
    >>> pdf = attachment({"type": "file", "mime_type": "application/pdf",
    ...                   "url": "https://x.test/a.pdf"})
    >>> admits(["image/*"], pdf), admits(["application/pdf"], pdf)
    (False, True)
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

BASE_TOKENS, TILE_TOKENS, FALLBACK_TILES = 85.0, 170.0, 4
AttachmentFilter = Any  # True, False, a list of MIME patterns, or "auto"


@dataclass(frozen=True)
class Attachment:
    """An image or file block: ``kind`` (``"Image"`` or ``"File"``), its MIME type, a label
    (its file name, else its type), and its estimated tokens."""

    kind: str
    mime_type: str | None
    label: str | None
    tokens: float
    block: dict[str, Any]


def attachment(block: Any) -> Attachment | None:
    """The attachment a content block holds (None for text, tool calls and the rest)."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    source: dict[str, Any] = block["source"] if isinstance(block.get("source"), dict) else {}
    if kind == "image_url":  # OpenAI's
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        detail = image.get("detail") if isinstance(image, dict) else None
        data, mime = _data_url(url)
        return _made("Image", mime, _name(url, block), data, detail, block)
    if kind in ("image", "file", "document", "pdf"):
        image = kind == "image"
        mime = block.get("mime_type") or source.get("media_type") or block.get("mimeType")
        raw = block.get("base64") or block.get("data") or source.get("data")
        url = block.get("url") or source.get("url")
        data, from_url = _decoded(raw) if raw else _data_url(url)
        mime = mime or from_url
        image = image or bool(mime and str(mime).lower().startswith("image/"))
        detail = block.get("detail") or (block.get("extras") or {}).get("detail")
        return _made("Image" if image else "File", mime, _name(url, block), data, detail, block)
    return None


def _made(
    kind: str, mime: Any, label: str | None, data: bytes | None, detail: Any, block: dict[str, Any]
) -> Attachment:
    given = (block.get("extras") or {}).get("token_estimate")
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given >= 0:
        tokens = float(given)  # the caller's own estimate wins
    elif kind == "Image":
        tokens = image_tokens(data, detail)
    else:
        tokens = 0.0  # a file counts its description (`description`), never its bytes
    mime_type = str(mime) if mime else None
    return Attachment(kind, mime_type, label or mime_type, tokens, block)


def _name(url: Any, block: dict[str, Any]) -> str | None:
    for key in ("filename", "name"):
        for where in (block, block.get("extras") or {}):
            if isinstance(where.get(key), str) and where[key].strip():
                return str(where[key]).strip()
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        tail = urlparse(url).path.rstrip("/").rsplit("/", 1)[-1]
        return unquote(tail) or None
    return None


def _decoded(raw: Any) -> tuple[bytes | None, str | None]:
    if isinstance(raw, bytes):
        return raw, None
    if not isinstance(raw, str):
        return None, None
    if raw.startswith("data:"):
        return _data_url(raw)
    try:
        return base64.b64decode(raw[:65_536], validate=False), None  # a header is enough
    except (binascii.Error, ValueError):
        return None, None


def _data_url(url: Any) -> tuple[bytes | None, str | None]:
    """A ``data:`` URL's bytes (the first 48 KiB: headers only are read) and MIME type."""
    if not isinstance(url, str) or not url.startswith("data:") or "," not in url:
        return None, None
    header, payload = url[5:].split(",", 1)
    mime = header.split(";", 1)[0] or None
    if ";base64" not in header:
        return unquote(payload)[:49_152].encode(), mime
    head = payload[:65_536]
    try:
        return base64.b64decode(head[: len(head) - len(head) % 4]), mime
    except (binascii.Error, ValueError):
        return None, mime


def image_size(data: bytes | None) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, GIF, JPEG or WebP header (None when unknown).

    >>> png = b"\\x89PNG\\r\\n\\x1a\\n" + b"\\0\\0\\0\\rIHDR" + (1024).to_bytes(4, "big") * 2
    >>> image_size(png)
    (1024, 1024)
    """
    if not data:
        return None
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp(data)
        if data[:2] == b"\xff\xd8":
            return _jpeg(data)
    except struct.error:
        return None
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        return width, int.from_bytes(data[27:30], "little") + 1
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a frame header
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def image_tokens(data: bytes | None, detail: Any = None) -> float:
    """OpenAI's tile price of an image (see the module docstring)."""
    if detail == "low":
        return BASE_TOKENS
    size = image_size(data)
    if size is None or min(size) <= 0:
        return BASE_TOKENS + TILE_TOKENS * FALLBACK_TILES
    width, height = float(size[0]), float(size[1])
    if max(width, height) > 2048:
        scale = 2048 / max(width, height)
        width, height = math.floor(width * scale), math.floor(height * scale)
    if min(width, height) > 768:
        scale = 768 / min(width, height)
        width, height = math.floor(width * scale), math.floor(height * scale)
    return BASE_TOKENS + TILE_TOKENS * math.ceil(width / 512) * math.ceil(height / 512)


def description(found: Attachment) -> str:
    """What the token string holds for an attachment instead of its bytes."""
    return f"[{found.kind}: {found.label or 'attachment'}]"


def admits(rule: AttachmentFilter, found: Attachment) -> bool:
    """Whether an ``observe_attachments`` rule sends `found` to the Observer: True (all), False
    (none), or MIME patterns (``"image/*"``, ``"application/pdf"``, ``"*"``; any case)."""
    if isinstance(rule, bool):
        return rule
    mime = (found.mime_type or "").lower()
    for pattern in rule:
        pattern = str(pattern).lower()
        if pattern == "*" or pattern == mime:
            return True
        if pattern.endswith("/*") and mime.startswith(pattern[:-1]):
            return True
    return False


def model_rule(rule: AttachmentFilter, model: Any) -> AttachmentFilter:
    """``"auto"`` settled for `model` by its LangChain profile (``image_inputs``,
    ``pdf_inputs``); a model without a profile gets everything, as Mastra does."""
    if rule != "auto":
        return rule
    profile = getattr(model, "profile", None) or {}
    if not isinstance(profile, dict) or "image_inputs" not in profile:
        return True
    allowed = ["image/*"] if profile.get("image_inputs") else []
    return allowed + (["application/pdf"] if profile.get("pdf_inputs") else [])
