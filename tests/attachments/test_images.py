"""Images scaled for a model: fitted to the side asked (never enlarged), within the byte bound,
PNG kept where it has transparency, a non-image and a decompression bomb refused by name."""

from __future__ import annotations

import io
import sys

import pytest
from PIL import Image

from weaver.attachments import images
from weaver.attachments.images import (
    ImagesUnavailableError,
    UnreadableImageError,
    scale_image,
)


def encoded(size: tuple[int, int], mode: str = "RGB", fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, (200, 30, 30) if mode == "RGB" else (0, 0, 0, 0)).save(out, fmt)
    return out.getvalue()


def test_a_large_photo_is_scaled_to_the_side_asked_as_jpeg() -> None:
    scaled = scale_image(encoded((3000, 1500), fmt="JPEG"), max_side=800)
    assert (scaled.width, scaled.height) == (3000, 1500)
    assert (scaled.sent_width, scaled.sent_height) == (800, 400) and scaled.scaled
    assert scaled.mime_type == "image/jpeg"
    assert Image.open(io.BytesIO(scaled.data)).size == (800, 400)


def test_a_small_image_is_not_enlarged_and_transparency_stays_png() -> None:
    scaled = scale_image(encoded((40, 30), mode="RGBA"), max_side=1024)
    assert (scaled.sent_width, scaled.sent_height) == (40, 30) and not scaled.scaled
    assert scaled.mime_type == "image/png"


def test_an_image_too_big_in_bytes_is_halved_until_it_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    noise = Image.effect_noise((1024, 1024), 100).convert("RGB")
    out = io.BytesIO()
    noise.save(out, "PNG")
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 40_000)
    scaled = scale_image(out.getvalue(), max_side=1024)
    assert len(scaled.data) <= 40_000
    assert scaled.sent_width < 1024 and scaled.width == 1024


def test_what_is_no_image_is_refused_by_name() -> None:
    with pytest.raises(UnreadableImageError, match="not an image that can be decoded"):
        scale_image(b"GIF89a but not really")


def test_a_decompression_bomb_is_refused_before_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "MAX_SOURCE_PIXELS", 100 * 100)
    with pytest.raises(UnreadableImageError, match="declares 200x200 pixels"):
        scale_image(encoded((200, 200)))


def test_without_pillow_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    data = encoded((10, 10))
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert not images.images_available()
    with pytest.raises(ImagesUnavailableError, match=r"weaver-mcp\[attachments\]"):
        scale_image(data)
