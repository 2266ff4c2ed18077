"""One attachment read for a model (`get_attachment`): an image scaled, a PDF page's text, or
only what the file is. A missing optional library, a file that is no image, a PDF that cannot
be read: each answers the file's metadata with a note saying why there is nothing more, rather
than an error, since what the file is stays worth knowing."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from weaver.attachments.images import (
    DEFAULT_MAX_SIDE,
    ImagesUnavailableError,
    ScaledImage,
    UnreadableImageError,
    scale_image,
)
from weaver.attachments.kinds import AttachmentKind, kind_of, mime_type_of
from weaver.attachments.pdf_text import (
    PdfPage,
    PdfUnavailableError,
    UnreadablePdfError,
    read_pdf_page,
)
from weaver.vault.fs import Vault

# Bigger image files are not decoded (a camera's RAW-sized PNG would take seconds).
MAX_IMAGE_FILE_BYTES = 50 * 1024 * 1024
# Formats Pillow does not read, or a vision model takes no better than their metadata.
NOT_DECODED = {"svg": "an SVG is a drawing in XML, not pixels: it is not sent as an image"}


@dataclass(frozen=True, slots=True)
class AttachmentRead:
    path: str
    kind: AttachmentKind
    mime_type: str
    size: int
    mtime_ns: int
    image: ScaledImage | None = None
    pdf: PdfPage | None = None
    note: str | None = None  # why there is no image or text


def read_attachment(
    vault: Vault, path: str, page: int = 1, max_side: int = DEFAULT_MAX_SIDE
) -> AttachmentRead:
    """The attachment at `path` (checked as `Vault.attachment_file` checks it)."""
    file = vault.attachment_file(path)
    rel = vault.relative(file) or path
    st = file.stat()
    kind = kind_of(rel)
    facts = AttachmentRead(rel, kind, mime_type_of(rel), st.st_size, st.st_mtime_ns)
    if kind == "image":
        return _with_image(facts, file, max_side)
    if kind == "pdf":
        return _with_pdf_page(facts, file, page)
    return facts


def _with_image(facts: AttachmentRead, file: Path, max_side: int) -> AttachmentRead:
    reason = NOT_DECODED.get(facts.path.rpartition(".")[2].lower())
    if reason is None and facts.size > MAX_IMAGE_FILE_BYTES:
        reason = f"the file is over {MAX_IMAGE_FILE_BYTES // 1024 // 1024} MB: not decoded"
    if reason is not None:
        return replace(facts, note=reason)
    try:
        return replace(facts, image=scale_image(file.read_bytes(), max_side))
    except (ImagesUnavailableError, UnreadableImageError) as exc:
        return replace(facts, note=str(exc))


def _with_pdf_page(facts: AttachmentRead, file: Path, page: int) -> AttachmentRead:
    try:
        found = read_pdf_page(file, page)
    except (PdfUnavailableError, UnreadablePdfError) as exc:
        return replace(facts, note=str(exc))
    if found.text is None:
        return replace(
            facts, pdf=found, note=f"the PDF has {found.pages} pages: there is no page {page}"
        )
    return replace(facts, pdf=found)
