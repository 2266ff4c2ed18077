"""Parse workers: a big pass parsed in other processes writes the same cache as one parsed in
place, and a worker that cannot start, dies midway or is abandoned loses no note."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from structlog.testing import capture_logs

from tests.helpers import WriteNotes
from weaver.cache.models import Link, Note, Tag
from weaver.config import Settings
from weaver.index import workers as parse_workers
from weaver.index.workers import ParseWorker, ReadChunk, Work, read_notes
from weaver.runtime.app import open_app
from weaver.vault.fs import Vault

# Dies after sending its first chunk, as a worker killed by the OOM killer would (whatever
# chunks its parent has claimed by then).
DIES_AFTER_ONE_CHUNK = """
import os
from weaver.index import workers as parse_workers
frame = parse_workers.pack_frame
def frame_then_die(payload):
    parse_workers.pack_frame = lambda payload: os._exit(9)
    return frame(payload)
parse_workers.pack_frame = frame_then_die
parse_workers.serve_worker()
"""
# Takes its time over every chunk, as a worker on a busy machine would.
SLOW = """
import time
from weaver.index import workers as parse_workers
parse = parse_workers.read_chunk
def slowly(*args):
    time.sleep(0.05)
    return parse(*args)
parse_workers.read_chunk = slowly
parse_workers.serve_worker()
"""
# Slow, and parses its whole share whatever its parent claimed: as if every claim came just
# after the worker had started on that chunk.
SLOW_AND_DEAF = SLOW.replace(
    "parse_workers.serve_worker()",
    "parse_workers._claims_since = lambda fd: 0\nparse_workers.serve_worker()",
)


@pytest.fixture
def every_pass_is_big(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any pass, in chunks small enough that each worker gets several."""
    monkeypatch.setattr(parse_workers, "PARALLEL_MIN", 1)
    monkeypatch.setattr(parse_workers, "CHUNK", 7)


@pytest.fixture
def vault(write_notes: WriteNotes) -> Vault:
    notes: dict[str, str | bytes] = {
        f"topic{i % 4}/Note {i}.md": f"---\ntags: [t{i % 5}]\ntype: concept\n---\n"
        f"# Note {i}\nSee [[Note {(i + 1) % 60}]], [[Missing {i}]] and #inline/{i % 3}.\n"
        for i in range(60)
    }
    notes["Broken yaml.md"] = "---\ntitle: [unclosed\n---\nbody [[Note 1]]\n"
    notes["Latin-1.md"] = "caf\xe9 [[Note 2]]\n".encode("latin-1")
    root = write_notes(notes)
    return Vault(root)


def work_of(vault: Vault) -> list[Work]:
    return [(s, None) for s in sorted(vault.scan(), key=lambda s: s.path)]


def read_with(vault: Vault, workers: int) -> list[ReadChunk]:
    return list(read_notes(vault, work_of(vault), reparse=False, workers=workers))


@pytest.fixture
def read_here(vault: Vault) -> dict[str, Any]:
    """Every note as this process alone reads it: what workers must give back, note for note."""
    return records_by_path(read_with(vault, workers=0))


@pytest.fixture
def parsed_here(read_here: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the chunks this process parses (one entry each) from here on, after `read_here`
    parsed them all; workers run their own copy of the parser."""
    parsed: list[int] = []
    parse = parse_workers.read_chunk

    def counted(*args: Any) -> ReadChunk:
        parsed.append(1)
        return parse(*args)

    monkeypatch.setattr(parse_workers, "read_chunk", counted)
    return parsed


def records_by_path(chunks: Iterable[ReadChunk]) -> dict[str, Any]:
    """Each note read, by path; none may come twice (the indexer would insert it twice)."""
    records = [r._replace(indexed_at=0) for chunk in chunks for r in chunk.records]
    by_path = {r.path: r for r in records}
    assert len(by_path) == len(records), "a note came twice"
    return by_path


def cache_contents(settings: Settings) -> dict[str, list[Any]]:
    app = open_app(settings)
    report = app.indexer.reconcile()
    assert (report.added, report.errors) == (62, 2)
    with app.db.connect() as conn:
        contents = {
            "notes": sorted(
                conn.execute(select(Note.path, Note.title, Note.frontmatter, Note.error)).all()
            ),
            "tags": sorted(conn.execute(select(Tag.note_path, Tag.key)).all()),
            "links": sorted(
                conn.execute(select(Link.source_path, Link.target, Link.target_path)).all()
            ),
            "search": sorted(conn.execute(text("SELECT path, body FROM notes_fts")).all()),
        }
    app.close()
    return contents


@pytest.mark.usefixtures("every_pass_is_big")
def test_a_pass_parsed_by_workers_writes_what_one_parsed_here_does(
    vault: Vault, tmp_path: Path
) -> None:
    def settings(name: str, workers: int) -> Settings:
        url = f"sqlite:///{tmp_path / name}"
        return Settings(vault=vault.root, database_url=url, index_workers=workers)

    here = cache_contents(settings("here.db", 0))
    assert cache_contents(settings("workers.db", 2)) == here
    assert len(here["links"]) == 60 * 2 + 1  # the note that is not UTF-8 keeps none


@pytest.mark.usefixtures("every_pass_is_big")
def test_a_worker_that_cannot_start_leaves_its_notes_to_this_process(
    vault: Vault, read_here: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_workers, "_WORKER_CODE", "raise SystemExit(3)")
    with capture_logs() as logs:
        assert records_by_path(read_with(vault, workers=2)) == read_here
    failures = [e for e in logs if e["event"].startswith("parse worker failed")]
    assert len(failures) == 2 and failures[0]["exit_code"] == 3


@pytest.mark.usefixtures("every_pass_is_big")
def test_a_worker_that_dies_midway_loses_no_note(
    vault: Vault, read_here: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_workers, "_WORKER_CODE", DIES_AFTER_ONE_CHUNK)
    with capture_logs() as logs:
        assert records_by_path(read_with(vault, workers=1)) == read_here
    assert [e["exit_code"] for e in logs if e["event"].startswith("parse worker")] == [9]


@pytest.mark.usefixtures("every_pass_is_big")
def test_a_pass_abandoned_midway_ends_its_workers(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[ParseWorker] = []
    original_send = ParseWorker.send

    def send(self: ParseWorker) -> None:
        started.append(self)
        original_send(self)

    monkeypatch.setattr(ParseWorker, "send", send)
    chunks = read_notes(vault, work_of(vault), reparse=False, workers=2)
    assert next(chunks).records
    chunks.close()  # the indexer's write failed, or Ctrl-C
    assert len(started) == 2
    assert all(w.process is not None and w.process.poll() is not None for w in started)


@pytest.mark.usefixtures("every_pass_is_big")
def test_this_process_parses_chunks_while_it_waits_and_none_comes_twice(
    vault: Vault,
    read_here: dict[str, Any],
    parsed_here: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parse_workers, "_WORKER_CODE", SLOW)
    with capture_logs() as logs:
        chunks = read_with(vault, workers=2)
    assert records_by_path(chunks) == read_here
    assert 0 < len(parsed_here) < len(chunks)  # shared: some here, the rest from the workers
    assert logs == []


@pytest.mark.usefixtures("every_pass_is_big")
def test_a_chunk_parsed_both_here_and_by_a_worker_comes_once(
    vault: Vault,
    read_here: dict[str, Any],
    parsed_here: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parse_workers, "_WORKER_CODE", SLOW_AND_DEAF)
    assert records_by_path(read_with(vault, workers=1)) == read_here
    assert parsed_here  # chunks were claimed here, and the worker sent them all the same


def test_a_small_pass_starts_no_worker(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_workers, "_WORKER_CODE", "raise SystemExit('must not run')")
    with capture_logs() as logs:
        chunks = read_with(vault, workers=2)
    assert sum(len(c.records) for c in chunks) == 62
    assert logs == []


@pytest.mark.usefixtures("every_pass_is_big")
def test_workers_run_this_weaver_whatever_folder_the_indexer_runs_in(
    vault: Vault, read_here: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from a folder holding another `weaver` (a checkout of another version), the workers
    still parse with the indexer's own code: one of another version sends what this one cannot
    write (its tasks in another shape)."""
    other = tmp_path / "elsewhere"
    (other / "weaver").mkdir(parents=True)
    (other / "weaver" / "__init__.py").write_text("raise SystemExit(7)\n")
    monkeypatch.chdir(other)
    with capture_logs() as logs:
        assert records_by_path(read_with(vault, workers=2)) == read_here
    assert [e for e in logs if e["event"].startswith("parse worker")] == []
