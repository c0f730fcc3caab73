"""Frame decode -> resize -> encode and its guards."""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from eqa_runner.images import (
    FrameError,
    black_pixels,
    image_size,
    load_frame,
    mime_of,
    resized_size,
)


def gradient(w: int, h: int) -> Image.Image:
    x = np.linspace(0, 255, w, dtype=np.uint8)[None, :].repeat(h, 0)
    return Image.fromarray(np.stack([x, x[:, ::-1], np.full_like(x, 90)], -1), "RGB")


@pytest.fixture(scope="module")
def hd_png(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("img") / "00000-rgb.png"
    gradient(1920, 1080).save(p, compress_level=1)
    return p


def decode(blob: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(blob))
    im.load()
    return im


@pytest.mark.parametrize("fmt,pil", [("png", "PNG"), ("jpeg", "JPEG")])
def test_hd_frame_resized_to_512(hd_png: Path, fmt: str, pil: str) -> None:
    im = decode(load_frame(hd_png, 512, fmt))
    assert im.format == pil
    assert im.size == (512, 288)
    assert im.mode == "RGB"
    # content survives: the red channel still ramps left to right
    arr = np.asarray(im)
    assert arr[:, :10, 0].mean() < 40 and arr[:, -10:, 0].mean() > 215


def test_jpeg_input_and_portrait(tmp_path: Path) -> None:
    p = tmp_path / "frame_1.jpg"
    gradient(968, 1296).save(p, quality=90)
    assert decode(load_frame(p, 512, "png")).size == (382, 512)


def test_no_resize_and_no_upscale(tmp_path: Path) -> None:
    p = tmp_path / "small.png"
    gradient(300, 200).save(p)
    assert decode(load_frame(p, None)).size == (300, 200)
    assert decode(load_frame(p, 600)).size == (300, 200)  # smaller frames are not upscaled


def test_non_rgb_modes_converted(tmp_path: Path) -> None:
    p = tmp_path / "rgba.png"
    gradient(64, 32).convert("RGBA").save(p)
    assert decode(load_frame(p, 32)).mode == "RGB"


def test_resized_size_and_helpers(hd_png: Path) -> None:
    assert resized_size(1920, 1080, 512) == (512, 288)
    assert resized_size(1296, 968, 512) == (512, 382)
    assert resized_size(1000, 1, 10) == (10, 1)  # never 0
    assert resized_size(640, 480, None) == (640, 480)
    assert resized_size(400, 300, 512) == (400, 300)
    assert image_size(hd_png) == (1920, 1080)
    assert mime_of("jpeg") == "image/jpeg" and mime_of("png") == "image/png"


def test_bad_output_format(hd_png: Path) -> None:
    with pytest.raises(FrameError, match="image_format"):
        load_frame(hd_png, 64, "gif")


def test_zero_byte(tmp_path: Path) -> None:
    p = tmp_path / "00003-rgb.png"
    p.write_bytes(b"")
    with pytest.raises(FrameError, match="empty") as e:
        load_frame(p)
    assert str(p) in str(e.value)


def test_truncated_png(tmp_path: Path, hd_png: Path) -> None:
    p = tmp_path / "00004-rgb.png"
    p.write_bytes(hd_png.read_bytes()[:5000])
    with pytest.raises(FrameError) as e:
        load_frame(p)
    assert str(p) in str(e.value)


def test_text_named_png(tmp_path: Path) -> None:
    p = tmp_path / "00005-rgb.png"
    p.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n")
    with pytest.raises(FrameError, match="cannot decode") as e:
        load_frame(p)
    assert str(p) in str(e.value)


def test_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "gone.png"
    with pytest.raises(FrameError) as e:
        load_frame(p)
    assert str(p) in str(e.value)


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_huge_png_refused_before_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "bomb.png"
    Image.new("1", (10000, 10000)).save(p)  # 1-bit, compresses to a few kB
    assert p.stat().st_size < 200_000

    def no_decode(self: Image.Image, *a: object, **k: object) -> None:
        raise AssertionError("pixels must not be decoded")

    monkeypatch.setattr(Image.Image, "load", no_decode)
    monkeypatch.setattr(Image.Image, "convert", no_decode)
    t0 = time.perf_counter()
    with pytest.raises(FrameError, match="pixel") as e:
        load_frame(p)
    assert time.perf_counter() - t0 < 1.0
    assert str(p) in str(e.value) and "10000x10000" in str(e.value)


@pytest.mark.parametrize("shape", [(1, 1), (37, 53), (288, 512)])
def test_encode_png_is_lossless(shape):
    import io

    import numpy as np
    from PIL import Image

    from eqa_runner.images import encode_png

    a = np.random.default_rng(shape[0]).integers(0, 256, (*shape, 3), dtype=np.uint8)
    back = np.asarray(Image.open(io.BytesIO(encode_png(a))).convert("RGB"))
    assert np.array_equal(back, a)


# ----------------------------------------------------------------------------- bit depths


def _png16(path: Path, arr: np.ndarray) -> Path:
    """A 16-bit PNG written by hand (greyscale: colour type 0; RGB: 2)."""
    import struct
    import zlib

    h, w = arr.shape[:2]
    ctype = 0 if arr.ndim == 2 else 2
    rows = b"".join(b"\x00" + arr[y].astype(">u2").tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", w, h, 16, ctype, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )  # fmt: skip
    return path


def test_16bit_greyscale_keeps_its_gradient(tmp_path: Path) -> None:
    """PIL's own convert clips 16-bit grey at 255 (an all-white frame); ours scales by 257."""
    ramp = np.linspace(0, 65535, 64).astype(np.uint16)[None, :].repeat(8, 0)
    out = np.asarray(decode(load_frame(_png16(tmp_path / "g16.png", ramp), None)))
    assert out.shape == (8, 64, 3)
    assert out[0, 0, 0] == 0 and out[0, -1, 0] == 255
    assert np.all(np.diff(out[0, :, 0].astype(int)) >= 0)  # monotone, not saturated
    assert abs(int(out[0, 32, 0]) - round(ramp[0, 32] / 257)) <= 1


def test_16bit_rgb_decoded_faithfully(tmp_path: Path) -> None:
    g = np.linspace(0, 65535, 16).astype(np.uint16)[None, :].repeat(4, 0)
    rgb = np.stack([g, g // 2, 65535 - g], -1)
    out = np.asarray(decode(load_frame(_png16(tmp_path / "c16.png", rgb), None)))
    assert np.abs(out.astype(int) - (rgb // 257).astype(int)).max() <= 1


def test_float_frame_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.tif"
    Image.fromarray(np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8), "F").save(path)
    with pytest.raises(FrameError, match="f.tif.*no display range"):
        load_frame(path)


@pytest.mark.parametrize("channels", [3, 4])
def test_black_pixels_counts_pixels_with_every_channel_zero(channels):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 3, (37, 41, channels), dtype=np.uint8)  # many zero channels
    rgb[:5] = 0
    by_sum = int(np.count_nonzero(rgb.reshape(-1, channels).sum(axis=1) == 0))  # the old rule
    assert black_pixels(rgb) == by_sum > 5 * 41
    assert black_pixels(rgb.astype(np.float32)) == by_sum
    assert black_pixels(np.zeros((4, 4, 3), np.uint8)) == 16
    assert black_pixels(np.full((4, 4, 3), 255, np.uint8)) == 0
