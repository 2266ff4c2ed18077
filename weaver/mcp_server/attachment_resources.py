"""Attachments as resources: `weaver://attachment/{+path}` (`?page=N` for a PDF's page).

An image reads as a blob, scaled as get_attachment scales it (`attachments.images`), so a
resource never carries a camera's full-size photo; any other attachment reads as the JSON
get_attachment answers (a PDF page's text, or the file's metadata)."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, quote, unquote, urlsplit

from mcp_types import BlobResourceContents, ResourceTemplate, TextResourceContents

from weaver.attachments.reading import read_attachment
from weaver.errors import InvalidPathError
from weaver.mcp_server.attachment_tools import attachment_data
from weaver.runtime.state import ServerState

ATTACHMENT_PREFIX = "weaver://attachment/"
ATTACHMENT_TEMPLATE = ATTACHMENT_PREFIX + "{+path}"

TEMPLATE = ResourceTemplate(
    uri_template=ATTACHMENT_TEMPLATE,
    name="attachment",
    title="An attachment of the vault",
    description="An image (scaled), or a PDF page's text (?page=N) or a file's metadata as JSON",
)


def attachment_uri(path: str) -> str:
    return ATTACHMENT_PREFIX + quote(path, safe="/")


def attachment_path(uri: str) -> str | None:
    """The vault path a `weaver://attachment/` URI names (None for other URIs)."""
    if not uri.startswith(ATTACHMENT_PREFIX):
        return None
    return unquote(urlsplit(uri.removeprefix(ATTACHMENT_PREFIX)).path)


def _page(uri: str) -> int:
    page = parse_qs(urlsplit(uri).query).get("page", ["1"])[0]
    if not page.isdigit() or int(page) < 1:
        raise InvalidPathError(uri, f"page must be a number from 1, not {page!r}")
    return int(page)


def read_attachment_resource(
    state: ServerState, uri: str
) -> TextResourceContents | BlobResourceContents:
    path = attachment_path(uri)
    assert path is not None  # the caller routes only attachment URIs here
    page = _page(uri)
    found = read_attachment(state.app.vault, path, page)
    if found.image is not None:
        blob = base64.b64encode(found.image.data).decode()
        return BlobResourceContents(uri=uri, mime_type=found.image.mime_type, blob=blob)
    text = attachment_data(state, found, page).model_dump_json(by_alias=True)
    return TextResourceContents(uri=uri, mime_type="application/json", text=text)
