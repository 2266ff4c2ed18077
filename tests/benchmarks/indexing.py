"""Parse floor, full (cold) index, no-op re-index, index memory and cache size, scaling.

The parse floor is the least any Python indexer of these notes spends: walk with `os.scandir`,
read each file's bytes, `decode_note`, `parse_note`, and nothing else (no hashing, no database).
The full index is `Indexer.reconcile()` into an empty, migrated cache. Both run in fresh child
processes (`worker.py`) on the same vault, best of a few runs each.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target
from tests.benchmarks.worker import clean_env, peak_rss_mb, run_worker

# The full index's time over the floor's (both cores may be used; the floor uses one).
TIME_RATIO_TARGET = Target("<=", 1.5, "≤ 1.5x the floor's time")
NOOP_TARGET = Target("<=", 1.0, "≤ 1 s")
INDEX_RSS_TARGET = Target("<=", 200, "≤ 200 MB")
SCALING_TARGET = Target(">=", 0.8, "≥ 80 % of the 10,000 figure")
# What reading tasks costs: the full index over the same vault's with its checkboxes taken out.
TASKS_COST_TARGET = Target("<=", 1.10, "≤ 1.10x the index without tasks")
# A list item's checkbox: "- [ ] " becomes "- ", so the text stays and only the task goes.
CHECKBOX = re.compile(r"^([ \t>]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+)\[[^\]\n]\][ \t]", re.M)


# ---------------------------------------------------------------- in the child process


def walk_notes(root: Path) -> Iterator[tuple[str, str]]:
    """(vault-relative path, absolute path) of every note, skipping dot-folders and dot-files."""
    stack = [(str(root), "")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                child = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, child))
                elif entry.name.lower().endswith(".md"):
                    yield child, entry.path


def measure_floor(vault: str, runs: int) -> dict[str, Any]:
    """Seconds of each of `runs` passes of walk + read + decode + parse over every note, and
    of as many passes of walk + read + decode alone (what the disk and the interpreter allow)."""
    from weaver.markdown.parser import decode_note, parse_note

    def one_pass(parse: bool) -> tuple[int, float]:
        started = time.perf_counter()
        notes = 0
        for rel, full in walk_notes(Path(vault)):
            with open(full, "rb") as handle:  # noqa: PTH123 - the cheapest read there is
                text, _error = decode_note(handle.read())
            if parse:
                parse_note(rel, text)
            notes += 1
        return notes, time.perf_counter() - started

    read = [one_pass(parse=False)[1] for _ in range(runs)]
    parsed = [one_pass(parse=True) for _ in range(runs)]
    return {
        "notes": parsed[0][0],
        "seconds": [seconds for _, seconds in parsed],
        "read_seconds": read,
        "peak_rss_mb": peak_rss_mb(),
    }


def measure_index(vault: str, noop_runs: int, database_url: str | None = None) -> dict[str, Any]:
    """A cold `reconcile()` into a new cache, then `noop_runs` no-op reconciles. `database_url`:
    into that (empty, unmigrated) database instead of the vault's SQLite cache, which is kept."""
    from sqlalchemy import func, select

    from weaver.cache.models import Link, Tag
    from weaver.config import Settings
    from weaver.log import configure_logging
    from weaver.runtime.app import open_app

    configure_logging("warning", "json")
    root = Path(vault)
    if database_url is None:
        shutil.rmtree(root / ".weaver", ignore_errors=True)
    started = time.perf_counter()
    app = open_app(Settings(vault=root, database_url=database_url))
    opened = time.perf_counter() - started
    rss_before = peak_rss_mb()
    started = time.perf_counter()
    report = app.indexer.reconcile()
    cold = time.perf_counter() - started
    peak = peak_rss_mb()
    noop = []
    for _ in range(noop_runs):
        started = time.perf_counter()
        again = app.indexer.reconcile()
        noop.append(time.perf_counter() - started)
        assert not again.changed, again.summary()
    with app.db.connect() as conn:
        links = conn.execute(select(func.count()).select_from(Link)).scalar_one()
        tags = conn.execute(select(func.count()).select_from(Tag)).scalar_one()
    db = root / ".weaver" / "cache.db"
    wal = _size(db.with_name("cache.db-wal"))
    db_bytes = _size(db) if database_url is None else _database_size(app.db)
    app.close()
    return {
        "open_seconds": opened,
        "cold_seconds": cold,
        "noop_seconds": noop,
        "report": report.summary(),
        "links": links,
        "tags": tags,
        "peak_rss_before_index_mb": rss_before,
        "peak_rss_mb": peak,
        "db_bytes": db_bytes,
        "wal_bytes_before_close": wal,
    }


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _database_size(db: Any) -> int:
    """A PostgreSQL cache's size on disk, tables and indexes (`pg_database_size`)."""
    from sqlalchemy import text

    with db.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


# ---------------------------------------------------------------- in the driver


def run(ctx: BenchContext) -> list[Figure]:
    for notes in ctx.sizes:
        vault = str(ctx.vault(notes))
        big = notes > ctx.reference  # 100,000 notes: one run of each is minutes already
        runs = 1 if big else ctx.index_runs
        # Floor and index take turns, so that a host whose speed drifts over the minutes (as
        # shared cloud hosts do, ~20 % seen) moves both rather than the ratio between them.
        floors, index, taskless = [], [], []
        plain = str(_without_tasks(Path(vault))) if notes == ctx.reference else None
        for _ in range(runs):
            passes = 1 if big else ctx.floor_runs
            floors.append(run_worker("floor", vault=vault, runs=passes))
            index.append(run_worker("index", vault=vault, noop_runs=3))
            if plain:  # taking turns with the index, for the reason above
                taskless.append(run_worker("index", vault=plain, noop_runs=0))
        floor = _merged(floors)
        for result in index:
            if result["report"]["added"] != notes or result["report"]["errors"]:
                raise RuntimeError(f"index of {notes} notes went wrong: {result['report']}")
        ctx.results[f"floor/{notes}"] = floor
        ctx.results[f"index/{notes}"] = index
        if taskless:
            ctx.results[f"index-without-tasks/{notes}"] = taskless
        print(
            f"  {notes:,} notes: floor {_rate(notes, min(floor['seconds'])):,.0f}/s, index "
            f"{_rate(notes, min(r['cold_seconds'] for r in index)):,.0f}/s",
            file=sys.stderr,
        )
    ctx.results["weaver_index_noop_seconds"] = _cli_noop(ctx)
    figures: list[Figure] = []
    for notes in ctx.sizes:
        figures += throughput_figures(ctx, notes)
    figures += tasks_cost_figures(ctx)
    figures += noop_figures(ctx)
    figures += memory_figures(ctx)
    figures += scaling_figures(ctx)
    return figures


def _without_tasks(vault: Path) -> Path:
    """A copy of the vault whose checkboxes are plain list items, made once per workdir."""
    copy = vault.with_name(f"{vault.name}-without-tasks")
    if copy.exists():
        return copy
    partial = copy.with_name(f"{copy.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    for path in vault.rglob("*"):
        relative = path.relative_to(vault)
        if relative.parts[0] == ".weaver" or not path.is_file():
            continue
        target = partial / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".md":
            target.write_text(CHECKBOX.sub(r"\1", path.read_text("utf-8")), "utf-8")
        else:
            shutil.copyfile(path, target)
    partial.rename(copy)
    return copy


def tasks_cost_figures(ctx: BenchContext) -> list[Figure]:
    notes = ctx.reference
    with_tasks = min(r["cold_seconds"] for r in ctx.results[f"index/{notes}"])
    without = min(r["cold_seconds"] for r in ctx.results[f"index-without-tasks/{notes}"])
    return [
        Figure(
            "full index",
            f"{notes:,} notes, with tasks over the same notes without",
            with_tasks / without,
            "ratio",
            f"{with_tasks / without:.2f}x ({with_tasks:.2f} s / {without:.2f} s)",
            TASKS_COST_TARGET,
        )
    ]


def _merged(floors: list[dict[str, Any]]) -> dict[str, Any]:
    """Several floor runs as one: every pass's seconds, the highest peak."""
    return {
        "notes": floors[0]["notes"],
        "seconds": [s for f in floors for s in f["seconds"]],
        "read_seconds": [s for f in floors for s in f["read_seconds"]],
        "peak_rss_mb": max(f["peak_rss_mb"] for f in floors),
    }


def _rate(notes: int, seconds: float) -> float:
    return notes / seconds


def _floor_rate(ctx: BenchContext, notes: int) -> float:
    return _rate(notes, min(ctx.results[f"floor/{notes}"]["seconds"]))


def _index_rate(ctx: BenchContext, notes: int) -> float:
    return _rate(notes, min(r["cold_seconds"] for r in ctx.results[f"index/{notes}"]))


def throughput_figures(ctx: BenchContext, notes: int) -> list[Figure]:
    floor, index = _floor_rate(ctx, notes), _index_rate(ctx, notes)
    runs = ctx.results[f"index/{notes}"]
    best = min(r["cold_seconds"] for r in runs)
    read = _rate(notes, min(ctx.results[f"floor/{notes}"]["read_seconds"]))
    figures = [
        Figure(
            "parse floor",
            f"{notes:,} notes: walk + read + decode only",
            read,
            "notes/s",
            f"{read:,.0f} notes/s ({notes / read:.2f} s)",
        ),
        Figure(
            "parse floor",
            f"{notes:,} notes: walk + read + decode + parse_note, no database",
            floor,
            "notes/s",
            f"{floor:,.0f} notes/s ({notes / floor:.2f} s)",
            data={"seconds": ctx.results[f"floor/{notes}"]["seconds"]},
        ),
        Figure(
            "full index",
            f"{notes:,} notes, cold",
            index,
            "notes/s",
            f"{index:,.0f} notes/s ({best:.2f} s)",
            data={
                "seconds": [r["cold_seconds"] for r in runs],
                "open_seconds": [r["open_seconds"] for r in runs],
                "links": runs[0]["links"],
                "tags": runs[0]["tags"],
            },
        ),
    ]
    if notes == ctx.reference or notes > ctx.reference:
        floor_best = notes / floor
        figures.append(
            Figure(
                "full index",
                f"{notes:,} notes, time over the floor's time",
                best / floor_best,
                "ratio",
                f"{best / floor_best:.2f}x the floor's time ({best:.2f} s / {floor_best:.2f} s; "
                f"{index / floor:.0%} of its rate)",
                TIME_RATIO_TARGET,
            )
        )
    return figures


def noop_figures(ctx: BenchContext) -> list[Figure]:
    runs = ctx.results[f"index/{ctx.reference}"]
    seconds = [s for r in runs for s in r["noop_seconds"]]
    median = statistics.median(seconds)
    cli = ctx.results["weaver_index_noop_seconds"]
    return [
        Figure(
            "no-op re-index",
            f"{ctx.reference:,} notes, reconcile()",
            median,
            "s",
            f"{median:.2f} s (median of {len(seconds)})",
            NOOP_TARGET,
            {"seconds": seconds},
        ),
        Figure(
            "no-op re-index",
            f"{ctx.reference:,} notes, whole `weaver index` command",
            cli,
            "s",
            f"{cli:.2f} s (process start-up and migration check included)",
        ),
    ]


def memory_figures(ctx: BenchContext) -> list[Figure]:
    figures = []
    for notes in ctx.sizes:
        if notes < ctx.reference:
            continue
        runs = ctx.results[f"index/{notes}"]
        peak = max(r["peak_rss_mb"] for r in runs)
        before = max(r["peak_rss_before_index_mb"] for r in runs)
        parser = max(r["children_peak_rss_mb"] for r in runs)
        target = INDEX_RSS_TARGET if notes == ctx.reference else None
        figures.append(
            Figure(
                "memory and size",
                f"peak RSS, indexing {notes:,} notes (indexer + parse worker)",
                peak + parser,
                "MB",
                f"{peak + parser:.0f} MB ({peak:.0f} + {parser:.0f}; "
                f"{before:.0f} MB before indexing)",
                target,
            )
        )
        size = runs[0]["db_bytes"] / 1e6
        figures.append(
            Figure(
                "memory and size",
                f"cache on disk, {notes:,} notes",
                size,
                "MB",
                f"{size:.1f} MB ({runs[0]['db_bytes'] / notes / 1024:.1f} KiB/note)",
            )
        )
    return figures


def scaling_figures(ctx: BenchContext) -> list[Figure]:
    reference = _index_rate(ctx, ctx.reference)
    figures = []
    for notes in ctx.sizes:
        if notes == ctx.reference:
            continue
        rate = _index_rate(ctx, notes)
        ratio = rate / reference
        floor_ratio = _floor_rate(ctx, notes) / _floor_rate(ctx, ctx.reference)
        target = SCALING_TARGET if notes > ctx.reference else None
        figures.append(
            Figure(
                "scaling",
                f"full index {notes:,} vs {ctx.reference:,} notes",
                ratio,
                "ratio",
                f"{rate:,.0f} vs {reference:,.0f} notes/s: {ratio:.0%} (floor {floor_ratio:.0%})",
                target,
            )
        )
    return figures


def _cli_noop(ctx: BenchContext) -> float:
    """`weaver index` on an up-to-date cache, as a user runs it: best of three."""
    weaver = Path(sys.executable).with_name("weaver")
    command = [str(weaver), "--vault", str(ctx.vault(ctx.reference)), "index", "--json"]
    seconds = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(command, cwd=ctx.workdir, env=clean_env(), check=True, capture_output=True)
        seconds.append(time.perf_counter() - started)
    return min(seconds)
