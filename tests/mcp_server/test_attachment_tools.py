"""get_attachment and list_attachments through the SDK's in-memory client: an image sent as
image content at the size asked with its own size said, a PDF page's text, the metadata of an
audio file with the notes linking to it, notes and paths outside the vault refused, the
attachments listed by kind, folder and use, a page at a time, and a client whose access rule
reads only some folders seeing only those."""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import BlobResourceContents, ImageContent, TextResourceContents
from PIL import Image

from tests.attachments.pdfs import text_pdf
from tests.helpers import write_files
from tests.mcp_server.test_access import PHONE, RULE, client_of
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.config import Settings

pytestmark = pytest.mark.anyio


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


FILES: dict[str, str | bytes] = {
    "Home.md": "![[wide.png]]\n[[Projects/paper.pdf]] and ![[song.mp3]]\n",
    "Projects/Ideas.md": "See ![[song.mp3]]\n",
    "wide.png": png(2000, 1000),
    "Projects/paper.pdf": text_pdf(["Abstract of the paper", "Results on page two"]),
    "Projects/unused.jpg": png(10, 10),
    "song.mp3": b"ID3" + bytes(100),
    "Private/scan.png": png(20, 20),
    "notes.txt": "plain text\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Served]:
    root = write_files(tmp_path / "vault", FILES)
    served = serve(Settings(vault=root, toolsets=["all"], access=[RULE]))
    yield served
    served.app.close()


@pytest.fixture(params=["legacy", "auto"])
async def client(request: pytest.FixtureRequest, site: Served) -> AsyncIterator[Client]:
    # 2025-11-25, as real clients speak it, and the SDK's newest protocol.
    async with Client(site.server, mode=request.param) as client:
        yield client


async def test_an_image_comes_as_image_content_scaled_with_its_size_said(client: Client) -> None:
    result = await client.call_tool("get_attachment", {"path": "wide.png", "maxSize": 400})
    assert not result.is_error
    data: dict[str, Any] = result.structured_content["data"]
    assert data["kind"] == "image" and data["mimeType"] == "image/png"
    assert (data["width"], data["height"]) == (2000, 1000)
    assert (data["sentWidth"], data["sentHeight"]) == (400, 200)
    assert data["linkedFrom"] == 1 and data["note"] is None
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert Image.open(io.BytesIO(base64.b64decode(image.data))).size == (400, 200)


async def test_a_pdf_page_gives_its_text_and_the_page_count(client: Client) -> None:
    tools = Tools(client)
    first = await tools.ok("get_attachment", path="Projects/paper.pdf")
    assert (first["page"], first["pages"], first["text"]) == (1, 2, "Abstract of the paper")
    second = await tools.ok("get_attachment", path="Projects/paper.pdf", page=2)
    assert second["text"] == "Results on page two" and not second["truncated"]
    past = await tools.ok("get_attachment", path="Projects/paper.pdf", page=5)
    assert past["text"] is None and past["note"] == "the PDF has 2 pages: there is no page 5"


async def test_another_file_gives_its_metadata_and_the_notes_linking_to_it(
    client: Client,
) -> None:
    result = await client.call_tool("get_attachment", {"path": "song.mp3"})
    assert len(result.content) == 1  # the JSON only
    data: dict[str, Any] = result.structured_content["data"]
    assert data["kind"] == "audio" and data["mimeType"] == "audio/mpeg"
    assert data["size"] == 103 and data["linkedFrom"] == 2 and data["modified"] > 0
    assert data["width"] is None and data["text"] is None


async def test_without_pillow_an_image_gives_metadata_and_how_to_install(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    result = await client.call_tool("get_attachment", {"path": "wide.png"})
    assert len(result.content) == 1
    data: dict[str, Any] = result.structured_content["data"]
    assert data["size"] > 0 and data["width"] is None
    assert "pip install 'weaver-mcp[attachments]'" in data["note"]


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("Home.md", "a markdown note, not an attachment"),
        ("../outside.png", "'..' is not accepted"),
        (".obsidian/app.json", "hidden or ignored folder"),
        ("missing.png", "File not found: 'missing.png'"),
    ],
)
async def test_notes_and_paths_outside_the_vault_are_refused(
    client: Client, path: str, error: str
) -> None:
    assert error in await Tools(client).error("get_attachment", path=path)


async def test_a_symlink_leading_out_is_refused(site: Served, tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(png(5, 5))
    (site.root / "link.png").symlink_to(tmp_path / "secret.png")
    async with Client(site.server, mode="legacy") as client:
        error = await Tools(client).error("get_attachment", path="link.png")
    assert "leads outside the vault" in error


async def test_attachments_are_listed_by_kind_folder_and_use(client: Client) -> None:
    tools = Tools(client)

    async def listed(**filters: Any) -> list[str]:
        data = await tools.ok("list_attachments", **filters)
        return [a["path"] for a in data["attachments"]]

    assert await listed() == [
        "Private/scan.png",
        "Projects/paper.pdf",
        "Projects/unused.jpg",
        "notes.txt",
        "song.mp3",
        "wide.png",
    ]
    assert await listed(kind="image") == ["Private/scan.png", "Projects/unused.jpg", "wide.png"]
    assert await listed(kind="other") == ["notes.txt"]
    assert await listed(folder="Projects") == ["Projects/paper.pdf", "Projects/unused.jpg"]
    assert await listed(unused=True) == ["Private/scan.png", "Projects/unused.jpg", "notes.txt"]
    assert await listed(unused=False, kind="audio") == ["song.mp3"]
    page = await tools.ok("list_attachments", limit=2, offset=2)
    assert [a["path"] for a in page["attachments"]] == ["Projects/unused.jpg", "notes.txt"]
    assert (page["total"], page["hasMore"]) == (6, True)
    song = (await tools.ok("list_attachments", kind="audio"))["attachments"][0]
    assert song == {
        "path": "song.mp3",
        "kind": "audio",
        "size": 103,
        "modified": song["modified"],
        "linkedFrom": 2,
    }


async def test_an_unknown_folder_is_named(client: Client) -> None:
    error = await Tools(client).error("list_attachments", folder="Projets")
    assert "Folder not found: 'Projets'" in error


async def test_a_client_reading_some_folders_sees_only_their_attachments(site: Served) -> None:
    async with client_of(site, PHONE) as tools:
        data = await tools.ok("list_attachments")
        assert [a["path"] for a in data["attachments"]] == [
            "Projects/paper.pdf",
            "Projects/unused.jpg",
        ]
        error = await tools.error("get_attachment", path="Private/scan.png")
        assert error.startswith("Access denied: path 'Private/scan.png' is outside the folders")
        pdf = await tools.ok("get_attachment", path="Projects/paper.pdf")
        assert pdf["text"] == "Abstract of the paper"


# -- resources ----------------------------------------------------------------------------


async def test_an_image_resource_is_its_scaled_blob(client: Client) -> None:
    contents = (await client.read_resource("weaver://attachment/wide.png")).contents[0]
    # An opaque image is sent as JPEG, whatever its file's format: a fraction of the bytes.
    assert isinstance(contents, BlobResourceContents) and contents.mime_type == "image/jpeg"
    assert Image.open(io.BytesIO(base64.b64decode(contents.blob))).size == (1024, 512)


async def test_a_pdf_resource_is_a_pages_text_as_json(client: Client) -> None:
    uri = "weaver://attachment/Projects/paper.pdf?page=2"
    contents = (await client.read_resource(uri)).contents[0]
    assert isinstance(contents, TextResourceContents) and contents.mime_type == "application/json"
    data = json.loads(contents.text)
    assert (data["page"], data["pages"], data["text"]) == (2, 2, "Results on page two")


async def test_an_attachment_resource_outside_the_clients_folders_is_refused(
    site: Served,
) -> None:
    async with client_of(site, PHONE) as tools:
        with pytest.raises(MCPError, match="outside the folders this client may read"):
            await tools.client.read_resource("weaver://attachment/Private/scan.png")
        readable = await tools.client.read_resource("weaver://attachment/Projects/unused.jpg")
        assert isinstance(readable.contents[0], BlobResourceContents)


async def test_a_bad_attachment_resource_is_named(client: Client) -> None:
    with pytest.raises(MCPError, match=r"'\.\.' is not accepted"):
        await client.read_resource("weaver://attachment/../secret.png")
    with pytest.raises(MCPError, match="page must be a number from 1, not 'x'"):
        await client.read_resource("weaver://attachment/Projects/paper.pdf?page=x")
