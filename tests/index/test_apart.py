"""Big reconciles of a lasting process run in a child process (`weaver.index.apart`): the cache
ends as an in-process pass leaves it, the pass's events reach this process's bus, writes wait
for the pass, and a child that cannot run it leaves the pass to this process."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.helpers import EngineFactory, WriteNotes, child_pids, wait_for
from tests.index.test_worker_orphans import alive
from weaver.cache.models import Link, Note
from weaver.config import Settings
from weaver.engine import FileTrigger, OnFile, WorkflowContext, workflow
from weaver.host.serve import served_state
from weaver.index import apart
from weaver.index.apart import ApartPasses
from weaver.index.indexer import Indexer
from weaver.runtime.app import App, open_app
from weaver.vault.events import NoteAdded, NoteModified, VaultEvent

pytestmark = pytest.mark.both_backends

NOTES = 12


@pytest.fixture
def lasting(settings: Settings) -> Iterator[App]:
    """An app as the daemon opens it, whose passes of `NOTES` notes or more run apart."""
    app = open_app(settings, lasting=True)
    assert app.indexer.apart is not None
    app.indexer.apart = ApartPasses(app.settings.db_url, min_notes=NOTES)
    yield app
    app.close()


@pytest.fixture
def notes(write_notes: WriteNotes) -> dict[str, str]:
    files = {f"n{i}.md": f"# Note {i}\nSee [[n{(i + 1) % NOTES}]] #topic\n" for i in range(NOTES)}
    write_notes(files)
    return files


def published(app: App) -> list[VaultEvent]:
    events: list[VaultEvent] = []
    app.bus.subscribe(events.extend)
    return events


def in_process_passes(app: App, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the passes this process writes itself."""
    counted: list[int] = []
    write = Indexer._apply

    def counting(self: Indexer, *args: object, **kwargs: object) -> object:
        counted.append(1)
        return write(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Indexer, "_apply", counting)
    return counted


def stored_notes(app: App) -> list[str]:
    with app.db.connect() as conn:
        return sorted(conn.execute(select(Note.path)).scalars())


def resolved_links(app: App) -> int:
    with app.db.connect() as conn:
        rows = conn.execute(select(Link.target_path).where(Link.target_path.is_not(None)))
        return len(rows.all())


def test_a_big_first_index_runs_apart_and_its_events_come_here(
    lasting: App, notes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = in_process_passes(lasting, monkeypatch)
    events = published(lasting)
    report = lasting.indexer.reconcile()
    assert here == []  # written by the child
    assert (report.added, report.errors) == (NOTES, 0)
    assert stored_notes(lasting) == sorted(notes)
    assert resolved_links(lasting) == NOTES
    assert sorted(e.path for e in events) == sorted(notes)
    assert all(isinstance(e, NoteAdded) and e.initial for e in events)


def test_after_a_pass_apart_a_watcher_batch_resolves_against_the_new_cache(
    lasting: App, notes: dict[str, str], vault_dir: Path
) -> None:
    lasting.indexer.reconcile()
    (vault_dir / "n0.md").write_text("# Note 0\nNow [[n5]] and [[n11]]\n")
    events = published(lasting)
    report = lasting.indexer.apply_paths(["n0.md"])  # in process: one note
    assert report.updated == 1
    assert events == [NoteModified("n0.md")]
    with lasting.db.connect() as conn:
        targets = conn.execute(select(Link.target_path).where(Link.source_path == "n0.md"))
        assert sorted(t or "" for t in targets.scalars()) == ["n11.md", "n5.md"]


def test_a_small_pass_runs_here(
    lasting: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes({f"n{i}.md": f"note {i}" for i in range(NOTES - 1)})
    here = in_process_passes(lasting, monkeypatch)
    assert lasting.indexer.reconcile().added == NOTES - 1
    assert here == [1]


def test_one_shot_commands_index_here(
    settings: Settings, notes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = open_app(settings)  # `weaver index`: it exits after, giving everything back
    try:
        assert app.indexer.apart is None
        here = in_process_passes(app, monkeypatch)
        assert app.indexer.reconcile().added == NOTES
        assert here == [1]
    finally:
        app.close()


@pytest.mark.parametrize(
    "child",
    [
        "import os; os._exit(3)",  # dies before answering
        "raise SystemExit('no such module')",  # exits with an error
        "import sys; sys.stdout.buffer.write(b'garbage!' * 4)",  # answers nonsense
    ],
)
def test_the_pass_runs_here_when_the_child_cannot(
    lasting: App, notes: dict[str, str], monkeypatch: pytest.MonkeyPatch, child: str
) -> None:
    monkeypatch.setattr(apart, "_CHILD_CODE", child)
    here = in_process_passes(lasting, monkeypatch)
    events = published(lasting)
    report = lasting.indexer.reconcile()
    assert here == [1]
    assert report.added == NOTES
    assert stored_notes(lasting) == sorted(notes)
    assert len(events) == NOTES


def test_the_pass_runs_here_when_the_childs_pass_fails(
    lasting: App, notes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child's own Indexer is told to fail: its pass raises, the parent's does not.
    monkeypatch.setattr(
        apart,
        "_CHILD_CODE",
        "from weaver.index import indexer\n"
        "def fail(*a, **k): raise RuntimeError('disk on fire')\n"
        "indexer.Indexer._apply = fail\n"
        "indexer.serve_pass_apart()\n",
    )
    report = lasting.indexer.reconcile()
    assert report.added == NOTES
    assert stored_notes(lasting) == sorted(notes)


def test_a_write_waits_for_the_pass_apart(
    lasting: App, notes: dict[str, str], vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note written while the child indexes is applied after the pass, against its rows."""
    started = threading.Event()
    run = apart.reconcile_apart
    order: list[str] = []

    def slow_child(*args: object) -> object:
        started.set()
        report = run(*args)  # type: ignore[arg-type]
        order.append("pass")
        return report

    monkeypatch.setattr("weaver.index.indexer.reconcile_apart", slow_child)
    passing = threading.Thread(target=lasting.indexer.reconcile)
    passing.start()
    assert started.wait(30)
    (vault_dir / "late.md").write_text("late [[n1]]\n")
    lasting.indexer.apply_paths(["late.md"])
    order.append("write")
    passing.join(60)
    assert order == ["pass", "write"]
    assert "late.md" in stored_notes(lasting)
    with lasting.db.connect() as conn:
        target = conn.execute(select(Link.target_path).where(Link.source_path == "late.md"))
        assert target.scalar_one() == "n1.md"


# A lasting process whose pass apart never ends (the child's pass sleeps), killed with -9 once
# its child runs. PRCTL is "keep", or "none" to leave the child as on macOS and Windows.
PARENT = """
import sys
from pathlib import Path
from weaver.config import Settings
from weaver.engine import FileTrigger, OnFile, WorkflowContext, workflow
from weaver.index import apart
from weaver.index.apart import ApartPasses
from weaver.runtime.app import open_app

apart._CHILD_CODE = (
    "import time\\n"
    "from weaver.index import apart, indexer\\n"
    "apart._run_pass = lambda *a: time.sleep(60)\\n"
    + ("apart.end_with_parent = lambda: None\\n" if sys.argv[2] == "none" else "")
    + "indexer.serve_pass_apart()\\n"
)
app = open_app(Settings(vault=Path(sys.argv[1])), lasting=True)
app.indexer.apart = ApartPasses(app.settings.db_url, min_notes=1)
app.indexer.reconcile()
"""


@pytest.mark.parametrize(
    "prctl",
    [
        pytest.param(
            "keep",
            marks=pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl"),
        ),
        "none",  # as on macOS and Windows: its stdin ends
    ],
)
def test_a_killed_process_takes_its_pass_apart_with_it(
    write_notes: WriteNotes, vault_dir: Path, prctl: str
) -> None:
    write_notes({f"n{i}.md": f"note {i}" for i in range(3)})
    with subprocess.Popen([sys.executable, "-c", PARENT, str(vault_dir), prctl]) as parent:
        child = wait_for(lambda: child_pids(parent.pid), 60, "the pass's child process")[0]
        parent.kill()
        assert parent.wait(timeout=10) == -9
    # A child still importing when its parent dies finds no order and ends: slow on a busy
    # machine (5 s failed under a loaded suite), so the wait is long; the point is that it ends.
    wait_for(lambda: not alive(child), 30, "the orphaned pass to end")


found: list[str] = []


@workflow(id="finder", name="Finder", triggers=[OnFile("**")])
def finder(ctx: WorkflowContext[Any]) -> None:
    found.extend(ctx.trigger.paths if isinstance(ctx.trigger, FileTrigger) else ())


def test_the_workflows_see_each_note_of_a_pass_apart_once(
    app: App, make_engine: EngineFactory, notes: dict[str, str]
) -> None:
    found.clear()
    app.indexer.apart = ApartPasses(app.settings.db_url, min_notes=NOTES)
    make_engine(finder)  # inline: the runs are over when the bus's handlers return
    app.indexer.reconcile()
    assert sorted(found) == sorted(notes)


def test_the_servers_run_their_big_passes_apart(settings: Settings) -> None:
    """`weaver serve` and the daemon's vaults (`served_state`) keep running after their first
    index: theirs runs apart."""
    with ExitStack() as cleanup:
        state, _engine = served_state(cleanup, settings, watch=False, files=True, queue=False)
        assert state.app.indexer.apart == ApartPasses(
            state.app.settings.db_url, settings.log_level, settings.log_format
        )
