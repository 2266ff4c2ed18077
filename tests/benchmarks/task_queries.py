"""Task queries on the generated vault's cache (about 3 tasks a note, so ≥ 300,000 at 100,000
notes): the Tasks plugin's typical question, "open, due before tomorrow, by due date, 50 of
them", and its neighbours, run through `run_task_query` as query_tasks runs them.

Each p95 is judged against the issue's 20 ms and shown as a ratio to a baseline measured in the
same run, on the same connection: one page of 50 task rows read by primary key, the least any
answer of 50 tasks costs, so a slower machine moves both.

Until the task parser writes the index's task rows, the cache holds none; the group then fills
the table from the vault's task lines itself (`_fill_tasks`, reading only the generator's own
line format) and says so in its figures.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, percentile
from weaver.cache.db import open_cache_engine
from weaver.cache.models import Task
from weaver.cache.task_queries import run_task_query
from weaver.config import Settings
from weaver.markdown.tasks import PRIORITY_NAMES
from weaver.runtime.app import open_app
from weaver.tasks.filters import TaskFilters, build_task_query
from weaver.tasks.query import TaskQuery
from weaver.tasks.query_language import parse_task_query

SECTION = "query latency"
FAST = Target("<=", 20, "p95 ≤ 20 ms")
CASES: tuple[tuple[str, str, Target | None], ...] = (
    (
        "not done, due before tomorrow, sort by due, limit 50",
        "not done\ndue before tomorrow\nsort by due\nlimit 50",
        FAST,
    ),
    (
        "not done, due before tomorrow, sort by due (true total)",
        "not done\ndue before tomorrow\nsort by due",
        FAST,
    ),
    ("not done, due this week (default sort: urgency)", "not done\ndue in this week", FAST),
    ("done in 2025-Q4, group by folder", "done in 2025-Q4\ngroup by folder", None),
)
_TASK_LINE = re.compile(r"^- \[(.)\] (.*)$")
_EMOJI_DATES = {"📅": "due", "⏳": "scheduled", "🛫": "start", "✅": "done"}
_EMOJI_PRIORITY = {"🔺": 0, "⏫": 1, "🔼": 2, "🔽": 4, "⏬": 5}


def run(ctx: BenchContext) -> list[Figure]:
    figures: list[Figure] = []
    for notes in sorted({ctx.reference, ctx.sizes[-1]}):
        _index(ctx.vault(notes))
        engine = open_cache_engine(f"sqlite:///{ctx.vault(notes) / '.weaver' / 'cache.db'}")
        try:
            filled = _ensure_tasks(engine, ctx.vault(notes))
            figures += _measure(engine, notes, ctx.calls, filled)
        finally:
            engine.dispose()
    return figures


def _index(vault: Path) -> None:
    """The vault's cache brought up to date: a no-op after the indexing group, a full index
    when the group runs alone (`--only task_queries`)."""
    app = open_app(Settings(vault=vault))
    try:
        app.indexer.reconcile()
    finally:
        app.close()


def _measure(engine: Engine, notes: int, calls: int, filled: bool) -> list[Figure]:
    today = date.today()
    queries: list[tuple[str, TaskQuery, Target | None]] = [
        (label, parse_task_query(text, today), target) for label, text, target in CASES
    ]
    overdue = build_task_query(TaskFilters(overdue=True, sort=("due",)), None, today)
    queries.append(("query_tasks overdue=true, sort due (structured)", overdue, FAST))
    with engine.connect() as conn:
        tasks = conn.execute(select(func.count()).select_from(Task)).scalar_one()
        baseline = _timed(calls, lambda: _floor(conn))
        figures = []
        for label, query, target in queries:
            seconds = _timed(calls, partial(run_task_query, conn, query, today, 0, 50))
            total = run_task_query(conn, query, today, 0, 1).page.total
            figures.append(_figure(label, seconds, baseline, target, notes, tasks, total, filled))
    return figures


def _floor(conn: Connection) -> Any:
    return conn.execute(select(Task.__table__).order_by(Task.id).limit(50)).all()


def _timed(calls: int, call: Callable[[], Any]) -> list[float]:
    call()  # warm the page cache
    seconds = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return seconds


def _figure(
    label: str,
    seconds: list[float],
    baseline: list[float],
    target: Target | None,
    notes: int,
    tasks: int,
    total: int,
    filled: bool,
) -> Figure:
    p50, p95 = percentile(seconds, 50) * 1000, percentile(seconds, 95) * 1000
    floor = percentile(baseline, 95) * 1000
    source = "rows filled by the bench" if filled else "rows the index wrote"
    return Figure(
        SECTION,
        f"tasks: {label}, {notes:,} notes ({tasks:,} tasks)",
        p95,
        "ms",
        f"p50 {p50:.1f} · p95 {p95:.1f} ms = {p95 / floor:.1f}× a 50-row page "
        f"({floor:.2f} ms); {total:,} match (n={len(seconds)}, {source})",
        target,
        {
            "p50_ms": p50,
            "p95_ms": p95,
            "baseline_p95_ms": floor,
            "ratio": p95 / floor,
            "tasks": tasks,
            "matching": total,
            "filled_by_bench": filled,
        },
    )


def _ensure_tasks(engine: Engine, vault: Path) -> bool:
    """Whether the bench had to fill the tasks table (the index wrote no task rows)."""
    with engine.connect() as conn:
        if conn.execute(select(func.count()).select_from(Task)).scalar_one() > 0:
            return False
    rows = [
        row
        for path in sorted(vault.rglob("*.md"))
        if ".weaver" not in path.parts
        for row in _task_rows(vault, path)
    ]
    with engine.begin() as conn:
        conn.execute(delete(Task))
        for start in range(0, len(rows), 10_000):
            conn.execute(insert(Task), rows[start : start + 10_000])
        conn.exec_driver_sql("ANALYZE tasks")
    return True


def _task_rows(vault: Path, path: Path) -> list[dict[str, Any]]:
    rel = path.relative_to(vault).as_posix()
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _TASK_LINE.match(line)
        if match is not None:
            rows.append(_task_row(rel, number, match[1], match[2]))
    return rows


def _task_row(path: str, line: int, box: str, text: str) -> dict[str, Any]:
    dates = dict.fromkeys(("due", "scheduled", "start", "created", "done", "cancelled"))
    for emoji, field in _EMOJI_DATES.items():
        found = re.search(rf"{emoji} (\d{{4}}-\d{{2}}-\d{{2}})", text)
        dates[field] = found[1] if found else None
    priority = next(
        (p for e, p in _EMOJI_PRIORITY.items() if e in text), PRIORITY_NAMES.index("none")
    )
    recurrence = re.search(r"🔁 ([^📅⏳🛫✅]+)", text)
    description = re.split(r" [🔺⏫🔼🔽⏬📅⏳🛫✅🔁]", text)[0]
    return {
        "note_path": path,
        "line": line,
        "parent_line": None,
        "heading": None,
        "block_id": None,
        "status_char": box,
        "status_type": "DONE" if box == "x" else "TODO",
        "description": description,
        "raw": f"- [{box}] {text}",
        "tags": re.findall(r"#[\w/]+", description),
        **dates,
        "recurrence": recurrence[1].strip() if recurrence else None,
        "priority": priority,
        "task_id": None,
        "depends_on": [],
        "fields": {},
        "warnings": [],
    }
