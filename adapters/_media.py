"""Image sizes read from file headers, and the GPT-5.6 ``detail: "high"`` rule (spec 05 §5).

Pure code: the request builders never fetch and never decode pixels; they only read the few
header bytes that carry an image's width and height (09, "Remote images"). Supported formats:
PNG (``IHDR``), JPEG (the first ``SOFn`` segment), GIF (logical screen) and WebP (``VP8``,
``VP8L`` and ``VP8X`` chunks). Anything else, or a header that is cut short, is "unknown".
"""

from __future__ import annotations

__all__ = ["image_dimensions", "needs_high_detail"]

#: GPT-5.6 limits (spec 05 §5): the longest side is first scaled down to this many pixels ...
MAX_SIDE = 65_535
#: ... then the image is cut into square patches of this many pixels ...
PATCH_SIDE = 32
#: ... and an image with more patches than this needs ``detail: "high"``.
MAX_PATCHES = 30_000

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers C0..CF, except C4 (DHT), C8 (JPG extension) and CC (DAC).
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length field: TEM and RST0..RST7.
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})
_JPEG_SOS, _JPEG_EOI = 0xDA, 0xD9


def image_dimensions(data: bytes) -> tuple[int, int] | None:
    """Return ``(width, height)`` read from a PNG, JPEG, GIF or WebP header.

    Returns ``None`` for any other format, a truncated header or a zero size. Never raises.
    """
    if data.startswith(_PNG_SIGNATURE):
        size = _png(data)
    elif data.startswith(b"\xff\xd8"):
        size = _jpeg(data)
    elif data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        size = (int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little"))
    elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        size = _webp(data)
    else:
        size = None
    if size is None or size[0] <= 0 or size[1] <= 0:
        return None
    return size


def needs_high_detail(data: bytes) -> bool:
    """Say whether GPT-5.6 needs ``detail: "high"`` for this image (spec 05 §5).

    GPT-5.6 reads the default detail as "original": it keeps the image's own size, only
    scaling the longest side down to 65,535 px (aspect kept, sides rounded to the nearest
    pixel), and refuses an image that then covers more than 30,000 patches of 32 x 32 px
    (partial patches count); ``"high"`` makes it resize the image instead. An image of
    unknown size never needs it.
    """
    size = image_dimensions(data)
    if size is None:
        return False
    width, height = size
    longest = max(width, height)
    if longest > MAX_SIDE:
        # Scale by MAX_SIDE / longest, rounding half up, in exact integer arithmetic.
        width = (2 * width * MAX_SIDE + longest) // (2 * longest)
        height = (2 * height * MAX_SIDE + longest) // (2 * longest)
    patches = -(-width // PATCH_SIDE) * -(-height // PATCH_SIDE)
    return patches > MAX_PATCHES


def _png(data: bytes) -> tuple[int, int] | None:
    # Signature (8), then the IHDR chunk: length (4), b"IHDR", width (4), height (4), big-endian.
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _jpeg(data: bytes) -> tuple[int, int] | None:
    # Walk the marker segments after SOI until a start-of-frame: length (2), precision (1),
    # height (2), width (2). The image data after SOS is never scanned.
    pos = 2
    while pos + 1 < len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _JPEG_STANDALONE:
            pos += 2
            continue
        if marker in (_JPEG_SOS, _JPEG_EOI) or pos + 4 > len(data):
            return None
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if marker in _JPEG_SOF:
            if pos + 9 > len(data):
                return None
            height = int.from_bytes(data[pos + 5 : pos + 7], "big")
            width = int.from_bytes(data[pos + 7 : pos + 9], "big")
            return width, height
        if length < 2:
            return None
        pos += 2 + length
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    # RIFF header (12), then the first chunk: fourcc (4), size (4), payload from offset 20.
    fourcc = data[12:16]
    if fourcc == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        # Lossy: frame tag (3), start code (3), 14-bit width and height, little-endian.
        width = int.from_bytes(data[26:28], "little") & 0x3FFF
        height = int.from_bytes(data[28:30], "little") & 0x3FFF
        return width, height
    if fourcc == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        # Lossless: signature byte, then width-1 and height-1 in 14 bits each, LSB first.
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if fourcc == b"VP8X" and len(data) >= 30:
        # Extended: flags (4), then canvas width-1 and height-1 in 24 bits each, little-endian.
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None
