"""Tasks and inline fields in the cache: written with their note (status types from the vault's
Tasks plugin settings), replaced with it, deleted with it, re-labelled when the settings change,
and inline fields readable by `get_file` and matchable by `query_files where=`."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy import Connection, select

from weaver.cache import read, write
from weaver.cache.models import Note, Task
from weaver.cache.property_match import PropertyCondition
from weaver.cache.rows import NoteRecord, task_row
from weaver.cache.task_rows import TASK_COLUMNS, relabel_tasks, task_rows
from weaver.index.indexer import Indexer
from weaver.index.workers import build_record
from weaver.markdown.inline_fields import InlineField
from weaver.markdown.parser import parse_note
from weaver.markdown.resolver import LinkResolver
from weaver.markdown.tasks import ParsedTask, TaskDates
from weaver.runtime.app import App
from weaver.tasks.statuses import SETTINGS_FILE, StatusRegistry, parse_status_settings
from weaver.vault.fs import FileStat

pytestmark = pytest.mark.both_backends


def task(line: int, char: str = " ", text: str = "do it", due: str | None = None) -> ParsedTask:
    return ParsedTask(
        line=line,
        parent_line=None,
        heading="Plan",
        block_id=None,
        status_char=char,
        description=text,
        raw=f"- [{char}] {text}",
        tags=("#work",),
        dates=TaskDates(due=due),
        recurrence=None,
        priority=3,
        task_id=None,
        depends_on=(),
        fields=(("owner", "ana"),),
        warnings=(),
    )


def note(
    path: str,
    tasks: tuple[ParsedTask, ...] = (),
    fields: tuple[InlineField, ...] = (),
    frontmatter: dict[str, Any] | None = None,
) -> NoteRecord:
    return NoteRecord(
        path=path,
        title=path,
        frontmatter=frontmatter or {},
        type=None,
        status=None,
        aliases=(),
        tags=(),
        links=(),
        size=1,
        created=1,
        modified=1,
        mtime_ns=1,
        content_hash=path,
        indexed_at=1,
        word_count=1,
        tasks_open=0,
        tasks_done=0,
        error=None,
        body="",
        tasks=tuple(map(task_row, tasks)),
        inline_fields=fields,
    )


@pytest.fixture
def conn(app: App) -> Iterator[Connection]:
    with app.db.begin() as connection:
        yield connection


def replace(conn: Connection, *records: NoteRecord, statuses: StatusRegistry | None = None) -> None:
    stored = set(conn.execute(select(Note.path)).scalars())
    write.replace_notes(conn, records, LinkResolver([r.path for r in records]), stored, statuses)


def tasks_of(conn: Connection) -> list[tuple[str, int, str, str, str | None]]:
    rows = conn.execute(
        select(Task.note_path, Task.line, Task.status_char, Task.status_type, Task.due).order_by(
            Task.note_path, Task.line
        )
    )
    return [tuple(r) for r in rows]  # type: ignore[misc]


QUESTION = parse_status_settings(
    json.dumps(
        {
            "statusSettings": {
                "customStatuses": [
                    {"symbol": "?", "name": "Question", "nextStatusSymbol": " ", "type": "NON_TASK"}
                ]
            }
        }
    )
)


def test_tasks_are_written_with_their_status_types(conn: Connection) -> None:
    replace(
        conn,
        note("a.md", (task(3, " ", due="2026-12-01"), task(4, "x"), task(5, "/"), task(6, "?"))),
    )
    assert tasks_of(conn) == [
        ("a.md", 3, " ", "TODO", "2026-12-01"),
        ("a.md", 4, "x", "DONE", None),
        ("a.md", 5, "/", "IN_PROGRESS", None),
        ("a.md", 6, "?", "TODO", None),  # unknown to the default settings
    ]
    row = conn.execute(select(Task.tags, Task.fields, Task.heading, Task.raw)).first()
    assert row is not None and tuple(row) == (["#work"], {"owner": "ana"}, "Plan", "- [ ] do it")


def test_the_vault_settings_label_the_tasks(conn: Connection) -> None:
    replace(conn, note("a.md", (task(1, "?"),)), statuses=QUESTION)
    assert tasks_of(conn) == [("a.md", 1, "?", "NON_TASK", None)]


def test_a_rewritten_note_replaces_its_tasks_and_a_deleted_one_takes_them(
    conn: Connection,
) -> None:
    replace(conn, note("a.md", (task(1), task(2))), note("b.md", (task(7),)))
    replace(conn, note("a.md", (task(2, "x"),)))
    assert tasks_of(conn) == [("a.md", 2, "x", "DONE", None), ("b.md", 7, " ", "TODO", None)]
    write.delete_files(conn, ["a.md"])
    assert tasks_of(conn) == [("b.md", 7, " ", "TODO", None)]


def test_relabelling_follows_new_settings_without_touching_other_columns(
    conn: Connection,
) -> None:
    replace(conn, note("a.md", (task(1, "?", due="2026-01-02"), task(2, "x"), task(3, "-"))))

    # QUESTION lists `?` as its only custom status: `-` is unknown there, so TODO.
    assert relabel_tasks(conn, QUESTION) == 2
    assert [r[3] for r in tasks_of(conn)] == ["NON_TASK", "DONE", "TODO"]
    only_core = parse_status_settings(
        json.dumps({"statusSettings": {"coreStatuses": [], "customStatuses": []}})
    )
    assert relabel_tasks(conn, only_core) == 2  # nothing configured: all unknown, TODO
    assert tasks_of(conn)[0] == ("a.md", 1, "?", "TODO", "2026-01-02")


def test_inline_fields_are_shown_and_matched_unless_the_frontmatter_has_the_key(
    conn: Connection,
) -> None:
    fields = (
        InlineField("Rating", "4", 3),
        InlineField("Status", "draft", 4),
        InlineField("mood", "calm", 5),
    )
    replace(conn, note("a.md", fields=fields, frontmatter={"status": "final"}), note("b.md"))
    detail = read.get_file(conn, "a.md")
    assert detail is not None and detail.inline_fields == fields
    assert detail.summary.frontmatter == {"status": "final"}

    def matching(*conditions: PropertyCondition) -> list[str]:
        filters = read.FileFilters(where=conditions)
        return [f.path for f in read.query_files(conn, filters, 10, 0).items]

    assert matching(PropertyCondition("rating", "gte", (3,))) == ["a.md"]
    assert matching(PropertyCondition("mood", "eq", ("calm",))) == ["a.md"]
    assert matching(PropertyCondition("status", "eq", ("draft",))) == []  # frontmatter wins
    assert matching(PropertyCondition("status", "eq", ("final",))) == ["a.md"]


def test_a_note_without_inline_fields_stores_none(conn: Connection) -> None:
    replace(conn, note("a.md"))
    assert conn.execute(select(Note.inline_fields)).scalar() is None
    detail = read.get_file(conn, "a.md")
    assert detail is not None and detail.inline_fields == ()


def test_the_indexer_relabels_when_the_settings_file_changes(app: App, vault_dir: Path) -> None:
    # On disk with the size and mtime of the record below, so that a reconcile keeps it.
    (vault_dir / "a.md").write_text("x", encoding="utf-8")
    os.utime(vault_dir / "a.md", ns=(1, 1))
    indexer = Indexer(app.db, app.vault, parse_workers=0)
    indexer.reconcile()
    with app.db.begin() as conn:
        replace(conn, note("a.md", (task(1, "?"),)), statuses=indexer.statuses)
    settings_file = vault_dir / SETTINGS_FILE
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text(
        json.dumps(
            {
                "statusSettings": {
                    "customStatuses": [
                        {
                            "symbol": "?",
                            "name": "Question",
                            "nextStatusSymbol": " ",
                            "type": "NON_TASK",
                        }
                    ]
                }
            }
        ),
        encoding="utf-8",
    )
    indexer.apply_paths([SETTINGS_FILE])  # what the watcher hands over
    with app.db.connect() as conn:
        assert tasks_of(conn) == [("a.md", 1, "?", "NON_TASK", None)]
    # Changed while nothing watched: the next start notices by the recorded digest.
    settings_file.write_text("{broken", encoding="utf-8")
    restarted = Indexer(app.db, app.vault, parse_workers=0)
    restarted.reconcile()
    assert restarted.statuses_problem is not None and "broken" in restarted.statuses_problem
    with app.db.connect() as conn:
        assert tasks_of(conn) == [("a.md", 1, "?", "TODO", None)]


# Every kind of value a task row holds, and a task nested under it.
RICH_NOTE = (
    "# Plan\n\n"
    "- [x] Call [[Ana]] #work [owner:: ana] 📅 2026-12-01 ⏳ 2026-11-30 🔁 every week ⏫ 🆔 t1"
    " ⛔ a,b ✅ 2026-13-01 ^blk\n"
    "    - [?] ask about #home\n"
)


def worker_record(text: str) -> NoteRecord:
    """A note's record as a parse worker sends it: built there, pickled through the pipe."""
    data = text.encode()
    stat = FileStat("plan.md", len(data), 1, 1)
    record = build_record(stat, data, hashlib.sha256(data).hexdigest(), None)
    return cast(NoteRecord, pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL)))


def test_a_record_from_a_worker_writes_every_value_of_its_parsed_tasks() -> None:
    parsed = parse_note("plan.md", RICH_NOTE).tasks
    rows = [
        dict(zip(TASK_COLUMNS, row, strict=True))
        for row in task_rows(worker_record(RICH_NOTE), QUESTION, json.dumps)
    ]
    expected = [
        {
            **task._asdict(),
            **task.dates._asdict(),
            "note_path": "plan.md",
            "status_type": QUESTION.type_of(task.status_char),
            "tags": json.dumps(list(task.tags)),
            "depends_on": json.dumps(list(task.depends_on)),
            "fields": json.dumps(dict(task.fields)),
            "warnings": json.dumps(list(task.warnings)),
        }
        for task in parsed
    ]
    for row in expected:
        del row["dates"]
    assert rows == expected
    assert [(r["line"], r["parent_line"], r["status_type"]) for r in rows] == [
        (3, None, "DONE"),
        (4, 3, "NON_TASK"),
    ]
    first = rows[0]
    assert (first["due"], first["scheduled"], first["done"]) == ("2026-12-01", "2026-11-30", None)
    assert (first["priority"], first["task_id"], first["block_id"]) == (1, "t1", "blk")
    assert json.loads(first["depends_on"]) == ["a", "b"]
    assert json.loads(first["warnings"]) == ["done date '2026-13-01' is not a date"]


def test_a_workers_tasks_arrive_as_values_the_cycle_collector_lets_go() -> None:
    """A parsed task that stays tracked by the cycle collector after crossing the pipe is walked
    at every collection while the writer runs: 30,000 of them made a first index of a vault
    with tasks a fifth slower than of the same vault without."""
    record = worker_record(RICH_NOTE)
    # A tuple is let go at a collection once what it holds is: a row holding tuples of pairs
    # (its fields), at the third.
    for _ in range(3):
        gc.collect()
    assert len(record.tasks) == 2
    assert not any(gc.is_tracked(task) for task in record.tasks)
