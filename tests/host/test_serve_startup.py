"""`weaver serve` answers its client before its first index is done (issue 39): `initialize`
and `tools/list` at once, and a read tool called meanwhile waits for the index, then answers
with every note. A real stdio process, whose first pass is held at a gate the test opens."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers import clean_env, write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

NOTES: dict[str, str | bytes] = {
    "Home.md": "# Home\n[[Topic]] #start\n",
    "sub/Topic.md": "# Topic\n[[Home]]\n",
    "sub/Later.md": "# Later\n",
}
# How long a call must still be waiting, once sent, for the test to call it "waiting".
STILL_WAITING_S = 1.0
GATE_TIMEOUT_S = 60.0

# `weaver serve` with the indexer's reconcile held until `gate` exists (`reconciling` says it
# started): the first index of a big vault, made as long as the test needs.
HELD_SERVE = """
import sys, time
from pathlib import Path
from weaver.index.indexer import Indexer

reconcile = Indexer.reconcile
gate, reconciling = Path(sys.argv[1]), Path(sys.argv[2])

def held(self, *args, **kwargs):
    reconciling.touch()
    deadline = time.monotonic() + {timeout}
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return reconcile(self, *args, **kwargs)

Indexer.reconcile = held
from weaver.cli import main
sys.exit(main(["--vault", sys.argv[3], "--log-level", "info", "serve", "--toolsets", "all"]))
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def envelope_of(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


async def test_the_tools_are_listed_before_the_first_index_and_a_read_waits_for_it(
    tmp_path: Path,
) -> None:
    vault = write_files(tmp_path / "vault", NOTES)
    gate, reconciling = tmp_path / "gate", tmp_path / "reconciling"
    script = textwrap.dedent(HELD_SERVE).format(timeout=GATE_TIMEOUT_S)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", script, str(gate), str(reconciling), str(vault)],
        env=clean_env(),
        cwd=str(tmp_path),
    )
    answered: list[dict[str, Any]] = []

    async def query(client: Client) -> None:
        answered.append(envelope_of(await client.call_tool("query_files", {"limit": 10})))

    with (tmp_path / "stderr.log").open("w") as log:
        async with Client(stdio_client(params, errlog=log), mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert not gate.exists()  # listed while the first index cannot have finished
            async with anyio.create_task_group() as tg:
                tg.start_soon(query, client)
                await anyio.sleep(STILL_WAITING_S)
                waited = not answered
                assert reconciling.exists()  # the index had begun: the call waits for it
                gate.touch()
    assert "query_files" in names
    assert waited, answered  # not answered from an empty cache
    files = [f["path"] for f in answered[0]["data"]["files"]]
    assert files == ["Home.md", "sub/Later.md", "sub/Topic.md"]
