"""Bases on the generated vault's cache: a `.base` view with two filters, one formula and a
sort, and the same question asked with `query_notes`, each run as the tools run them (the base
read and parsed, the files narrowed in SQL and loaded, filters and the formula evaluated, the
rows sorted, the first page of 50 made into the answer).

Each p95 is judged against the issue's 50 ms and shown as a ratio to a baseline measured in the
same run, on the same connection: 50 notes' rows and frontmatter read by primary key, the least
any answer of 50 rows costs, so a slower machine moves both.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, select

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, percentile
from tests.benchmarks.task_queries import timed
from weaver.bases.document import document_from_query, view_of
from weaver.cache.models import Note
from weaver.cache.read import read_snapshot
from weaver.config import Settings
from weaver.mcp_server.base_answers import view_answer
from weaver.runtime import base_views
from weaver.runtime.app import App, open_app
from weaver.runtime.kept_rows import kept_for

SECTION = "query latency"
TARGET = Target("<=", 50, "p95 ≤ 50 ms")
BASE_PATH = "Bench views.base"
# Two filters (a tag with its nested tags, a property comparison), one formula (days since the
# note was made, from its `created` property), sorted by the formula: the view.
BASE = """filters:
  and:
    - file.hasTag("project")
    - status != "done"
formulas:
  age: ((today() - created) / 86400000).round()
views:
  - type: table
    name: Oldest open projects
    order: [file.name, note.status, formula.age]
    sort:
      - property: formula.age
        direction: DESC
"""
QUESTION: dict[str, Any] = {
    "filter": {"and": ['file.hasTag("project")', 'status != "done"']},
    "formulas": {"age": "((today() - created) / 86400000).round()"},
    "sort": [{"property": "formula.age", "direction": "DESC"}],
}


def run(ctx: BenchContext) -> list[Figure]:
    notes = ctx.reference
    vault = ctx.vault(notes)
    (vault / BASE_PATH).write_text(BASE, encoding="utf-8")
    app = open_app(Settings(vault=vault))
    try:
        app.indexer.reconcile()
        return _measure(app, notes, ctx.calls)
    finally:
        app.close()
        (vault / BASE_PATH).unlink()


def _measure(app: App, notes: int, calls: int) -> list[Figure]:
    # As a serving process does after start-up and each index (`gc_freeze`): what is alive
    # now is out of the cycle collector's sight, so its pauses visit only what a view makes.
    gc.collect()
    gc.freeze()
    try:
        return _measure_views(app, notes, calls)
    finally:
        gc.unfreeze()


def _measure_views(app: App, notes: int, calls: int) -> list[Figure]:
    with read_snapshot(app.db) as conn:
        baseline = timed(calls, lambda: _floor(conn))
        base_seconds = timed(calls, lambda: _query_base(app, conn))
        notes_seconds = timed(calls, lambda: _query_notes(conn))
        cold_seconds = timed(max(calls // 5, 5), lambda: _cold(app, lambda: _query_base(app, conn)))
        base_rows = _query_base(app, conn)["total"]
        question_rows = _query_notes(conn)["total"]
    edited_seconds = _after_edits(app, max(calls // 5, 5))
    return [
        _figure(
            "query_base, 2 filters + 1 formula + sort", base_seconds, baseline, notes, base_rows
        ),
        _figure("query_notes, the same question", notes_seconds, baseline, notes, question_rows),
        _figure(
            "query_base after one of its notes changed", edited_seconds, baseline, notes, base_rows
        ),
        _figure(
            "query_base, first run in a process (no rows kept)",
            cold_seconds,
            baseline,
            notes,
            base_rows,
            target=None,
        ),
    ]


def _cold(app: App, call: Callable[[], Any]) -> Any:
    kept_for(app.db).clear()
    return call()


def _after_edits(app: App, trials: int) -> list[float]:
    """query_base right after one note of its rows changed on disk and was indexed: that
    note's row is evaluated again, the others' kept."""
    with read_snapshot(app.db) as conn:
        paths = [row["path"] for row in _query_base(app, conn, limit=trials)["rows"]]
    originals = {path: (app.vault.root / path).read_bytes() for path in paths}
    seconds = []
    try:
        for path in paths:
            (app.vault.root / path).write_bytes(originals[path] + b"\nEdited.\n")
            app.indexer.apply_paths([path])
            with read_snapshot(app.db) as conn:
                started = time.perf_counter()
                _query_base(app, conn)
                seconds.append(time.perf_counter() - started)
    finally:  # the vault is shared with the other groups: as it was
        for path, data in originals.items():
            (app.vault.root / path).write_bytes(data)
        app.indexer.apply_paths(originals)
    return seconds


def _query_base(app: App, conn: Connection, limit: int = 50) -> dict[str, Any]:
    source = base_views.read_source(app.vault, BASE_PATH, None)
    return view_answer(base_views.run_source(conn, source, None), limit, 0)


def _query_notes(conn: Connection) -> dict[str, Any]:
    document = document_from_query(
        QUESTION["filter"], QUESTION["formulas"], QUESTION["sort"], None, None, None
    )
    run = base_views.run_document(conn, base_views.AD_HOC, document, view_of(document, None))
    return view_answer(run, 50, 0, ad_hoc=True)


def _floor(conn: Connection) -> Any:
    page = select(Note.path, Note.frontmatter).order_by(Note.path).limit(50)
    return conn.execute(page).all()


def _figure(
    label: str,
    seconds: list[float],
    baseline: list[float],
    notes: int,
    rows: int,
    target: Target | None = TARGET,
) -> Figure:
    p50, p95 = percentile(seconds, 50) * 1000, percentile(seconds, 95) * 1000
    floor = percentile(baseline, 95) * 1000
    return Figure(
        SECTION,
        f"bases: {label}, {notes:,} notes",
        p95,
        "ms",
        f"p50 {p50:.1f} · p95 {p95:.1f} ms = {p95 / floor:.1f}× a 50-row page "
        f"({floor:.2f} ms); {rows:,} rows (n={len(seconds)})",
        target,
        {
            "p50_ms": p50,
            "p95_ms": p95,
            "baseline_p95_ms": floor,
            "ratio": p95 / floor,
            "rows": rows,
        },
    )
