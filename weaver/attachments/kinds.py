"""The kind of an attachment by its extension: what `list_attachments` filters on and what
`get_attachment` answers with (an image, a PDF page's text, or metadata)."""

from __future__ import annotations

from typing import Literal, get_args

AttachmentKind = Literal["image", "pdf", "audio", "video", "other"]
ATTACHMENT_KINDS: tuple[AttachmentKind, ...] = get_args(AttachmentKind)

# The formats Obsidian embeds (help.obsidian.md, "Accepted file formats"); webm is listed as
# video, where Obsidian plays it.
EXTENSIONS: dict[AttachmentKind, tuple[str, ...]] = {
    "image": ("avif", "bmp", "gif", "jpeg", "jpg", "png", "svg", "webp"),
    "pdf": ("pdf",),
    "audio": ("flac", "m4a", "mp3", "ogg", "wav", "3gp"),
    "video": ("mkv", "mov", "mp4", "ogv", "webm"),
}

MIME_TYPES = {
    "avif": "image/avif",
    "bmp": "image/bmp",
    "gif": "image/gif",
    "jpeg": "image/jpeg",
    "jpg": "image/jpeg",
    "png": "image/png",
    "svg": "image/svg+xml",
    "webp": "image/webp",
    "pdf": "application/pdf",
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "wav": "audio/wav",
    "3gp": "audio/3gpp",
    "mkv": "video/x-matroska",
    "mov": "video/quicktime",
    "mp4": "video/mp4",
    "ogv": "video/ogg",
    "webm": "video/webm",
    "canvas": "application/json",
    "base": "application/yaml",
}
_KIND_OF = {ext: kind for kind, exts in EXTENSIONS.items() for ext in exts}


def extension_of(path: str) -> str:
    """The extension, lower case and without its dot ('' for none)."""
    name = path.rpartition("/")[2]
    stem, dot, ext = name.rpartition(".")
    return ext.lower() if dot and stem else ""


def kind_of(path: str) -> AttachmentKind:
    return _KIND_OF.get(extension_of(path), "other")


def mime_type_of(path: str) -> str:
    return MIME_TYPES.get(extension_of(path), "application/octet-stream")
