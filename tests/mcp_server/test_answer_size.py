"""Every tool's default answer fits a context window: under 25,000 tokens (estimated the
conservative way `weaver.mcp_server.sizing` documents), on the most linked and the biggest
notes of every corpus and of a generated vault with extremes (1,500 backlinks and 3,000
outgoing links on long paths, a 700 KB note, a Chinese note, a note with 600 tags).

A tool whose required argument this test cannot fill fails it: a new tool must say here what
its worst default call is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from tests.benchmarks.answers import default_answer_sizes, find_extremes
from tests.benchmarks.vaultgen import generate_vault
from tests.corpora import require_corpora
from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, serve
from weaver.config import Settings
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND

pytestmark = pytest.mark.anyio

CORPORA = ("tasks-demo", "kepano-obsidian", "edge-vault")
GENERATED_NOTES = 500
LINKERS = 1_500
# Long enough that 1,500 backlinks listed whole would be ~29,000 tokens.
LINKER = "linkers/a folder with a long name/a note that links to the magnet {:04}.md"


def extremes_vault(root: Path) -> None:
    """A generated vault, plus the notes a real vault holds once in a while."""
    generate_vault(root, GENERATED_NOTES)
    linkers = {LINKER.format(i): f"[[Magnet]] {i}\n" for i in range(LINKERS)}
    write_files(
        root,
        {
            **linkers,
            "Magnet.md": "# Magnet\n"
            + "\n".join(f"[[{LINKER.format(i)}]] [[missing {i}]]" for i in range(LINKERS))
            + "\n",
            "giant.md": "# Giant\n" + ("lorem ipsum dolor sit amet\n" * 26_000),
            "chinese.md": "# 插件\n" + ("插件标签笔记。\n" * 20_000),
            "tagged.md": "---\ntags: [" + ", ".join(f"t{i}" for i in range(600)) + "]\n---\n",
        },
    )


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=[*CORPORA, "generated"])
def vault(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("size")
    if request.param == "generated":
        root = base / "vault"
        extremes_vault(root)
    else:
        root = require_corpora() / request.param
    settings = Settings(vault=root, database_url=f"sqlite:///{base / 'cache.db'}", read_only=True)
    served = serve(settings)
    yield served
    served.app.close()


@pytest.fixture
async def client(vault: Served) -> AsyncIterator[Client]:
    async with Client(vault.server, mode="legacy") as connected:
        yield connected


async def test_every_default_answer_stays_under_the_bound(vault: Served, client: Client) -> None:
    x = find_extremes(vault.app)
    sizes = await default_answer_sizes(client, x)
    over = {call: tokens for call, tokens in sizes.items() if tokens >= ANSWER_TOKEN_BOUND}
    assert not over, f"answers over {ANSWER_TOKEN_BOUND} estimated tokens: {over}"
    ran = {call.split(" ", 1)[0] for call in sizes}
    assert ran == {tool.name for tool in (await client.list_tools()).tools}
    if (vault.root / "Magnet.md").exists():  # the generated vault: its extremes were the aim
        assert (x.most_linked, x.biggest) == ("Magnet.md", "giant.md")
        assert sizes['get_file_content {"path": "giant.md"}'] > ANSWER_TOKEN_BOUND // 2
