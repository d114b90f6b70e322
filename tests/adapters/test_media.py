"""Image header sizes and the GPT-5.6 detail rule (spec 05 §5), on hand-built headers."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from adapters._media import image_dimensions, needs_high_detail


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">II5B", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0\0\0\0"


def gif(width: int, height: int, version: bytes = b"89a") -> bytes:
    return b"GIF" + version + struct.pack("<HH", width, height) + b"\x00\x00\x00"


def jpeg(width: int, height: int, sof: int = 0xC0) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    dht = b"\xff\xc4" + struct.pack(">H", 5) + b"\x00\x00\x00"
    frame = b"\xff" + bytes([sof]) + struct.pack(">HBHHB", 11, 8, height, width, 1)
    frame += b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + dht + frame + b"\xff\xda\x00\x02\xff\xd9"


def riff(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_lossy(width: int, height: int) -> bytes:
    return riff(b"VP8 ", b"\x30\x01\x00\x9d\x01\x2a" + struct.pack("<HH", width, height))


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return riff(b"VP8L", b"\x2f" + struct.pack("<I", bits))


def webp_extended(width: int, height: int) -> bytes:
    w, h = width - 1, height - 1
    return riff(b"VP8X", b"\x00\x00\x00\x00" + w.to_bytes(3, "little") + h.to_bytes(3, "little"))


@pytest.mark.parametrize(
    "make", [png, gif, jpeg, webp_lossy, webp_lossless, webp_extended], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("size", [(1, 1), (640, 480), (300, 7000), (16383, 2)])
def test_dimensions_of_each_format(
    make: Callable[[int, int], bytes], size: tuple[int, int]
) -> None:
    assert image_dimensions(make(*size)) == size


def test_large_sizes_beyond_16_bits() -> None:
    assert image_dimensions(png(100_000, 3)) == (100_000, 3)
    assert image_dimensions(webp_extended(70_000, 20)) == (70_000, 20)


def test_gif87a_and_progressive_jpeg() -> None:
    assert image_dimensions(gif(9, 4, b"87a")) == (9, 4)
    assert image_dimensions(jpeg(123, 45, sof=0xC2)) == (123, 45)


def test_jpeg_fill_bytes_and_standalone_markers_are_skipped() -> None:
    data = jpeg(77, 66)
    data = data[:2] + b"\xff\xff\xd0" + data[2:]  # fill byte, then RST0
    assert image_dimensions(data) == (77, 66)


def test_jpeg_frame_behind_100_kib_of_metadata() -> None:
    # EXIF can fill several APP1 segments (at most 65,533 payload bytes each) before the frame.
    app1 = b"".join(b"\xff\xe1" + struct.pack(">H", 2 + n) + bytes(n) for n in (65_533, 36_867))
    data = jpeg(8000, 6000)
    assert image_dimensions(data[:2] + app1 + data[2:]) == (8000, 6000)


def test_jpeg_without_a_frame_before_scan_is_unknown() -> None:
    assert image_dimensions(b"\xff\xd8\xff\xda\x00\x02\xff\xd9") is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not an image at all",
        png(10, 10)[:20],
        jpeg(10, 10)[:30],
        gif(10, 10)[:8],
        webp_lossy(10, 10)[:27],
        riff(b"VP8 ", b"\x30\x01\x00\x00\x00\x00\x0a\x00\x0a\x00"),  # bad start code
        riff(b"VP8L", b"\x00\x00\x00\x00\x00"),  # bad signature byte
        riff(b"ALPH", b"\x00" * 10),
        png(0, 10),
        gif(10, 0),
    ],
)
def test_unknown_or_truncated_headers(data: bytes) -> None:
    assert image_dimensions(data) is None


@pytest.mark.parametrize(
    ("width", "height", "high"),
    [
        (100, 100, False),
        (4800, 6400, False),  # 150 x 200 = exactly 30,000 patches: not more than the limit
        (4801, 6400, True),  # 151 x 200 = 30,200 (a partial patch counts)
        (5440, 5632, False),  # 170 x 176 = 29,920
        (5472, 5632, True),  # 171 x 176 = 30,096
        (65_535, 500, True),  # no scaling: 2,048 x 16 = 32,768
        (1_000_000, 32, False),  # 31,250 patches unscaled, but 65,535 x 2 px -> 2,048 x 1
        (32, 1_000_000, False),  # the same, standing
        (200_000, 20_000, True),  # scaled to 65,535 x 6,553.5 -> 6,554 -> 2,048 x 205
        (5600, 5600, True),  # 175 x 175 = 30,625
        (6400, 4832, True),  # 200 x 151 = 30,200
        (131_070, 500, False),  # scaled to 65,535 x 250 -> 2,048 x 8
        (131_070, 1500, True),  # scaled to 65,535 x 750 -> 2,048 x 24
        (131_070, 897, True),  # 448.5 rounds up to 449 px: 2,048 x 15 (rounding down: 14)
    ],
)
@pytest.mark.parametrize("make", [png, webp_extended], ids=lambda f: f.__name__)
def test_needs_high_detail(
    make: Callable[[int, int], bytes], width: int, height: int, high: bool
) -> None:
    assert needs_high_detail(make(width, height)) is high


def test_unknown_image_never_needs_high_detail() -> None:
    assert needs_high_detail(b"\x00" * 64) is False
