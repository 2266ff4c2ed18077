"""`Indexer.apply_paths_together`: writes that arrive while a pass runs share the next one."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import pytest

from tests.helpers import WriteNotes, wait_for
from weaver.cache import read
from weaver.index.indexer import IndexReport
from weaver.runtime.app import App

WRITERS = 5


def _start_writers(
    app: App, paths: list[str], errors: list[BaseException]
) -> list[threading.Thread]:
    def write(path: str) -> None:
        try:
            app.indexer.apply_paths_together([path])
        except BaseException as exc:  # collected for the test's assertions
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in paths]
    for thread in threads:
        thread.start()
    return threads


def _queue_behind_a_pass(app: App, paths: list[str], errors: list[BaseException]) -> None:
    """Every writer waits while a pass holds the lock; then they run, and end."""
    with app.indexer._lock:  # a pass under way
        threads = _start_writers(app, paths, errors)
        wait_for(lambda: len(app.indexer._waiting) == len(paths), what="every writer queued")
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()


def test_writes_queued_behind_a_pass_share_one_pass(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [f"n{i}.md" for i in range(WRITERS)]
    write_notes({p: f"# {p}\n[[n0]]\n" for p in paths})
    passes: list[set[str]] = []
    apply_paths = app.indexer._apply_paths

    def counted(given: Iterable[str]) -> IndexReport:
        passes.append(set(given))
        return apply_paths(given)

    monkeypatch.setattr(app.indexer, "_apply_paths", counted)
    errors: list[BaseException] = []
    _queue_behind_a_pass(app, paths, errors)
    assert errors == []
    assert passes == [set(paths)]  # one pass, with every writer's path
    with app.db.connect() as conn:
        assert read.count_notes(conn) == WRITERS
    app.indexer.apply_paths_together(["n0.md"])  # alone: its own pass
    assert passes[-1] == {"n0.md"}


def test_a_failed_shared_pass_fails_every_writer_in_it(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [f"n{i}.md" for i in range(WRITERS)]
    write_notes(dict.fromkeys(paths, "# note\n"))

    def broken(_given: Iterable[str]) -> IndexReport:
        raise OSError("disk gone")

    monkeypatch.setattr(app.indexer, "_apply_paths", broken)
    errors: list[BaseException] = []
    _queue_behind_a_pass(app, paths, errors)
    assert len(errors) == WRITERS
    assert all(isinstance(e, OSError) and "disk gone" in str(e) for e in errors)
    assert app.indexer._waiting == []  # nobody is left waiting for a pass that will not come
