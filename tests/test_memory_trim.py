"""Freed heap memory goes back to the system after a burst of work (`memory_trim`): glibc's
`malloc_trim` on Linux, nothing elsewhere; the server calls it once its first index is done."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import anyio
import pytest

from tests.helpers import WriteNotes
from weaver import memory_trim
from weaver.cache import read
from weaver.runtime import lifespan
from weaver.runtime.app import App
from weaver.runtime.state import ServerState

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_trimming_is_there_on_glibc_and_harmless_elsewhere() -> None:
    assert memory_trim.can_trim() == GLIBC
    assert isinstance(memory_trim.trim_heap(), bool)


def resident_kib() -> int:
    with Path("/proc/self/status").open() as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1])


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's")
def test_a_freed_burst_is_given_back() -> None:
    """200 MB in small blocks, freed but for one in 64, which pins the heap's top so that
    glibc cannot shrink it on its own: the process keeps the memory until it is trimmed."""
    burst = [bytes(4096) for _ in range(50_000)]
    kept = burst[::64]
    del burst
    before = resident_kib()
    assert memory_trim.trim_heap()
    assert before - resident_kib() > 100_000  # most of the freed 200 MB, in KiB
    assert len(kept) == 782


def test_the_server_trims_after_its_first_index(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes({f"n{i}.md": f"# Note {i}\n" for i in range(30)})
    trims: list[int] = []

    def counted() -> bool:
        with app.db.connect() as conn:
            trims.append(read.count_notes(conn))
        return True

    monkeypatch.setattr(lifespan, "trim_heap", counted)
    anyio.run(lifespan._reconcile, ServerState(app, watch=False))
    assert trims == [30]  # once, after the whole index
