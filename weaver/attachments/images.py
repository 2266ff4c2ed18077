"""An image scaled for a model: at most `max_side` pixels on its longer side and
`MAX_IMAGE_BYTES` encoded, as PNG (transparency, drawings, screenshots) or JPEG (photos).

Pillow is the `attachments` extra: without it `scale_image` raises `ImagesUnavailableError`
and the tool answers the image's metadata with a note saying how to install it."""

from __future__ import annotations

import io
from dataclasses import dataclass

from weaver.errors import WeaverError

# An encoded image's bound: a few thousand tokens for a vision model, well inside what MCP
# clients take in one result.
MAX_IMAGE_BYTES = 1024 * 1024
DEFAULT_MAX_SIDE = 1024
# A file claiming more pixels than this is refused before it is decoded (a decompression
# bomb: a few KB of PNG can declare gigapixels).
MAX_SOURCE_PIXELS = 100_000_000
INSTALL_HINT = "install the attachments extra (pip install 'weaver-mcp[attachments]')"


class ImagesUnavailableError(WeaverError):
    """Pillow is not installed."""

    def __init__(self) -> None:
        super().__init__(f"images cannot be shown here: {INSTALL_HINT}")


class UnreadableImageError(WeaverError):
    """The file is no image Pillow can decode (or declares too many pixels)."""


@dataclass(frozen=True, slots=True)
class ScaledImage:
    data: bytes
    mime_type: str
    width: int  # the original's
    height: int
    sent_width: int  # what `data` holds
    sent_height: int

    @property
    def scaled(self) -> bool:
        return (self.sent_width, self.sent_height) != (self.width, self.height)


def images_available() -> bool:
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def scale_image(data: bytes, max_side: int = DEFAULT_MAX_SIDE) -> ScaledImage:
    """`data` decoded, scaled down to fit `max_side` (never up) and re-encoded, halved again
    until it fits `MAX_IMAGE_BYTES`. Raises `UnreadableImageError` for what is no image."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ImagesUnavailableError() from None
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_SOURCE_PIXELS:
                raise UnreadableImageError(
                    f"the image declares {width}x{height} pixels, more than "
                    f"{MAX_SOURCE_PIXELS:,} are decoded"
                )
            image.draft("RGB", (max_side, max_side))  # JPEG: decode at a reduced size
            return _fit(image.copy(), width, height, max_side)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise UnreadableImageError(f"not an image that can be decoded: {exc}") from None


def _fit(image: object, width: int, height: int, max_side: int) -> ScaledImage:
    from PIL import Image

    assert isinstance(image, Image.Image)
    side = max_side
    while True:
        copy = image.copy()
        copy.thumbnail((side, side), Image.Resampling.LANCZOS)
        encoded, mime_type = _encode(copy)
        if len(encoded) <= MAX_IMAGE_BYTES or side <= 64:
            return ScaledImage(encoded, mime_type, width, height, copy.width, copy.height)
        side //= 2


def _encode(image: object) -> tuple[bytes, str]:
    """JPEG for an opaque photo-like image (smaller by far), PNG where it keeps what JPEG
    loses: transparency, and palettes (drawings, screenshots saved as GIF or PNG-8)."""
    from PIL import Image

    assert isinstance(image, Image.Image)
    out = io.BytesIO()
    if image.mode in ("RGBA", "LA", "P", "PA", "1") or "transparency" in image.info:
        image.save(out, "PNG", optimize=True)
        return out.getvalue(), "image/png"
    image.convert("RGB").save(out, "JPEG", quality=85)
    return out.getvalue(), "image/jpeg"
