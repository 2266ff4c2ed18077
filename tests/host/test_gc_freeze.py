"""A process that keeps running (`serve`, `daemon`) takes what it keeps out of the cycle
collector's rounds, without leaking it once dropped; any other process is left alone."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp import Client
from sqlalchemy import Connection

from tests.helpers import WriteNotes, wait_for_async
from weaver import gc_freeze
from weaver.cache import graph as cache_graph
from weaver.cache import read
from weaver.mcp_server import build_server
from weaver.runtime.app import App
from weaver.runtime.state import ServerState

KEPT: list[Callable[[Connection], Any]] = [
    cache_graph.load_graph,
    cache_graph.load_names,
    cache_graph.load_tag_index,
]


@pytest.fixture
def indexed(app: App, write_notes: WriteNotes) -> App:
    write_notes(
        {
            f"area {i % 7}/note {i}.md": f"---\ntags: [t{i % 13}]\n---\n[[note {i + 1}]] #x{i}"
            for i in range(400)
        }
    )
    app.indexer.reconcile()
    return app


@pytest.fixture
def long_running(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(gc_freeze, "_settling", False)  # put back when the test ends
    gc_freeze.keep_pauses_short()
    yield
    gc.unfreeze()


def collected_ids() -> set[int]:
    """Objects a full collection visits (the frozen are not among them)."""
    return {id(o) for o in gc.get_objects()}


@pytest.mark.parametrize("build", KEPT, ids=["graph", "names", "tags"])
@pytest.mark.usefixtures("long_running")
def test_an_index_a_server_builds_is_out_of_the_collectors_rounds(
    indexed: App, build: Callable[[Connection], Any]
) -> None:
    kept = cache_graph.ByVersion(build)
    with read.read_snapshot(indexed.db) as conn:
        index = kept.get(conn)
    containers = [v for v in vars(index).values() if gc.is_tracked(v)]
    assert containers
    assert not {id(c) for c in containers} & collected_ids()


@pytest.mark.parametrize("build", KEPT, ids=["graph", "names", "tags"])
@pytest.mark.usefixtures("long_running")
def test_frozen_indexes_are_freed_once_dropped(
    indexed: App, build: Callable[[Connection], Any]
) -> None:
    def build_and_drop() -> int:
        """Objects frozen with the index, which dropping it should free."""
        kept = cache_graph.ByVersion(build)
        with read.read_snapshot(indexed.db) as conn:
            before = gc.get_freeze_count()
            kept.get(conn)
            frozen = gc.get_freeze_count() - before
        del kept  # no reference cycle holds it: reference counting alone frees it
        return frozen

    build_and_drop()  # the first build compiles its statements, which SQLAlchemy keeps
    start = gc.get_freeze_count()
    frozen = sorted(build_and_drop() for _ in range(5))
    # A build now and then reads ~200 lower: the statement cache evicts entries frozen with an
    # earlier build while this one runs (read.last_updated), which the count subtracts. So the
    # typical build is judged, and what stays after all of them: a few objects of the
    # connection each build read with.
    assert frozen[2] > 400 and gc.get_freeze_count() - start < 5 * 10


def test_any_other_process_freezes_nothing(indexed: App) -> None:
    frozen = gc.get_freeze_count()
    kept = cache_graph.ByVersion(cache_graph.load_graph)
    with read.read_snapshot(indexed.db) as conn:
        graph = kept.get(conn)
    gc_freeze.settle()
    assert gc.get_freeze_count() == frozen
    assert id(graph.out) in collected_ids()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def serving_later(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(gc_freeze, "_settling", False)
    gc.unfreeze()
    gc_freeze.keep_pauses_short_later()
    yield
    gc.unfreeze()


@pytest.mark.anyio
@pytest.mark.usefixtures("serving_later")
async def test_serve_freezes_what_start_up_built_once_ready_not_before(
    indexed: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`weaver serve` answers its first requests before it collects (issue 39): the lifespan
    collects and freezes once the first index is done."""
    index_done = threading.Event()
    reconcile = indexed.indexer.reconcile

    def held_reconcile(*args: Any, **kwargs: Any) -> Any:
        index_done.wait(10)
        return reconcile(*args, **kwargs)

    monkeypatch.setattr(indexed.indexer, "reconcile", held_reconcile)
    state = ServerState(indexed, watch=False)
    async with Client(build_server(state)) as client:
        assert (await client.list_tools()).tools
        assert gc.get_freeze_count() == 0  # answered before any collection
        index_done.set()
        await state.wait_ready()
        await wait_for_async(lambda: gc.get_freeze_count() > 0, 5, "the freeze")
