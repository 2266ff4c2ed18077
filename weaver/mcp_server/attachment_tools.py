"""The attachment tools (get_attachment, list_attachments): the vault's files other than
notes, shown to the model. Thin edges over `weaver.attachments` and `weaver.cache.attachments`;
the `attachments` toolset, served on request (docs/tools.md, "Toolsets")."""

from __future__ import annotations

import base64
from typing import Annotated

from mcp_types import CallToolResult, ImageContent
from pydantic import Field

from weaver.attachments.images import DEFAULT_MAX_SIDE, ScaledImage
from weaver.attachments.kinds import AttachmentKind, kind_of
from weaver.attachments.pdf_text import PdfPage
from weaver.attachments.reading import AttachmentRead, read_attachment
from weaver.cache import attachments as cached
from weaver.cache.read import read_snapshot
from weaver.mcp_server import hints
from weaver.mcp_server.arguments import Filter, Limit, Offset, clamp_to, normalize_directory
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.envelope import answer
from weaver.mcp_server.schemas import Envelope, WireModel
from weaver.mcp_server.sizing import fitted
from weaver.paging import has_more
from weaver.runtime.state import ServerState

MIN_SIDE, MAX_SIDE = 64, 2048


class AttachmentData(WireModel):
    path: str
    kind: AttachmentKind = Field(description="image, pdf, audio, video or other")
    mime_type: str
    size: int = Field(description="Bytes")
    modified: int = Field(description="Last modified (epoch ms)")
    linked_from: int = Field(description="Notes linking to or embedding it")
    width: int | None = Field(default=None, description="An image's own width (px)")
    height: int | None = Field(default=None, description="An image's own height (px)")
    sent_width: int | None = Field(
        default=None, description="The width of the image content sent (scaled to maxSize)"
    )
    sent_height: int | None = None
    page: int | None = Field(default=None, description="The PDF page whose text is given")
    pages: int | None = Field(default=None, description="The PDF's page count")
    text: str | None = Field(default=None, description="The page's text layer (no OCR)")
    truncated: bool = Field(default=False, description="The page's text was cut to fit")
    note: str | None = Field(default=None, description="Why no image or text is given")


class AttachmentInfo(WireModel):
    path: str
    kind: AttachmentKind
    size: int = Field(description="Bytes")
    modified: int = Field(description="Last modified (epoch ms)")
    linked_from: int = Field(description="Notes linking to or embedding it (0: unused)")


class ListAttachmentsData(WireModel):
    attachments: list[AttachmentInfo]
    total: int
    limit: int
    offset: int
    has_more: bool


AttachmentResult = Annotated[CallToolResult, Envelope[AttachmentData]]

GET_ATTACHMENT = """An attachment (a file of the vault other than a note): an image as image
content, a PDF page's text, or what any other file is.

An image (png, jpg, gif, webp, bmp, avif) comes as MCP image content after the JSON, scaled to
at most `maxSize` pixels on its longer side (never up), with its own `width` and `height` and
the `sentWidth`/`sentHeight` sent. A PDF gives the text layer of `page` (from 1; no OCR) and
its page count: ask the next page with `page`. Anything else (audio, video, SVG, other files)
gives its kind, type, size, modification time and `linkedFrom` (the notes linking to it).
`note` says why no image or text came (the attachments extra not installed, a file that cannot
be read). Find attachments with list_attachments. Example: {"path": "assets/diagram.png"}."""

LIST_ATTACHMENTS = """The vault's attachments (files other than notes), by kind, folder or
use. Use it to find images, PDFs and files no note links to.

Each with `kind` (image, pdf, audio, video, other), `size`, `modified` and `linkedFrom` (notes
linking to or embedding it). `kind` keeps one kind; `folder` keeps those in it and its
subfolders; `unused` true keeps those no note links to (candidates for clean-up), false those
some note does. By path; paged: `total`, `hasMore`, `offset`. Read one with get_attachment.
Example: {"kind": "image", "unused": true}."""


@tool("Attachment", GET_ATTACHMENT, toolset="attachments", cache_hit=False)
async def get_attachment(
    state: ServerState,
    path: Annotated[str, Field(description="The attachment's path from the vault root")],
    page: Annotated[int, Field(ge=1, description="A PDF's page, from 1")] = 1,
    maxSize: Annotated[
        int,
        Field(ge=MIN_SIDE, le=MAX_SIDE, description="An image's longer side at most, in px"),
        clamp_to(MIN_SIDE, MAX_SIDE),
    ] = DEFAULT_MAX_SIDE,
) -> AttachmentResult:
    # Async, to add the image after the envelope: `answer` builds a result of JSON only.
    found: list[AttachmentRead] = []

    def work() -> AttachmentData:
        read = read_attachment(state.app.vault, path, page, maxSize)
        found.append(read)
        return attachment_data(state, read, page)

    result = await answer(state, work, cache_hit=False)
    image = found[0].image if found and not result.is_error else None
    if image is not None:
        encoded = base64.b64encode(image.data).decode()
        picture = ImageContent(type="image", data=encoded, mime_type=image.mime_type)
        result.content.append(picture)
    return result


def attachment_data(state: ServerState, read: AttachmentRead, page: int) -> AttachmentData:
    with read_snapshot(state.app.db) as conn:
        linked = cached.linking_notes(conn, [read.path]).get(read.path, 0)
    return AttachmentData(
        path=read.path,
        kind=read.kind,
        mime_type=read.mime_type,
        size=read.size,
        modified=read.mtime_ns // 1_000_000,
        linked_from=linked,
        note=read.note,
        **_image_fields(read.image),
        **_pdf_fields(read.pdf, page),
    )


def _image_fields(image: ScaledImage | None) -> dict[str, int]:
    if image is None:
        return {}
    return {
        "width": image.width,
        "height": image.height,
        "sent_width": image.sent_width,
        "sent_height": image.sent_height,
    }


def _pdf_fields(pdf: PdfPage | None, page: int) -> dict[str, object]:
    if pdf is None:
        return {}
    if pdf.text is None:
        return {"pages": pdf.pages}
    text, truncated = fitted(pdf.text)  # a page of small print can run past the bound
    return {"pages": pdf.pages, "page": page, "text": text, "truncated": truncated}


@tool("List attachments", LIST_ATTACHMENTS, toolset="attachments")
def list_attachments(
    state: ServerState,
    kind: Annotated[
        AttachmentKind | None, Field(description="image, pdf, audio, video or other")
    ] = None,
    folder: Annotated[Filter, Field(description="Only attachments in this folder or below")] = None,
    unused: Annotated[
        bool | None, Field(description="true: linked from no note; false: linked from some")
    ] = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> ListAttachmentsData:
    clean = normalize_directory(folder)
    filters = cached.AttachmentFilters(kind, clean, unused)
    with read_snapshot(state.app.db) as conn:
        hints.check_folder(state, conn, clean)
        found = cached.list_attachments(conn, filters, limit, offset)
    rows = [
        AttachmentInfo(
            path=a.path,
            kind=kind_of(a.path),
            size=a.size,
            modified=a.mtime_ns // 1_000_000,
            linked_from=a.linked_from,
        )
        for a in found.items
    ]
    return ListAttachmentsData(
        attachments=rows,
        total=found.total,
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(rows), found.total),
    )
