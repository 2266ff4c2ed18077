"""`--postgres`: the cache on PostgreSQL beside SQLite, in the same run on the same vault
(issue 26, "Measured").

A real PostgreSQL server is started for the group as the tests start theirs
(`tests/pg_server.py`: `initdb` + `pg_ctl` on a temporary folder, loopback, `fsync` and
`synchronous_commit` off since its data is thrown away). At the reference size:

- **full index**: a cold `reconcile()` into an empty SQLite cache and into an empty
  PostgreSQL database (migrated on open, as a first `weaver index` does), taking turns as the
  indexing group's floor and index do, best of `ctx.index_runs` each; the figure is the ratio.
- **top 5 against the full ranking**: `search_notes`' queries (`queries.COMMON_WORDS`,
  `queries.MIXED`, the rare word) through `fts.search`, which ranks only the best
  `pg_search.RANK_CANDIDATES` matches in full, against every match ranked by a plain
  `ts_rank_cd` `ORDER BY`: the top 5 must hold the same scores (equal scores may come in
  another order: the full ranking breaks ties by path, over notes it never ranked).
- **read tools**: the queries group's cases (`queries.TOOL_CASES` and `EDIT_CASES`), measured by
  the same worker through the Python SDK's in-memory client, once with the SQLite cache and once
  with `database_url` pointing at the PostgreSQL one. Each PostgreSQL row is judged as the
  queries group judges SQLite's (p95 ≤ 20 ms; `get_stats` ≤ 50 ms) and shows SQLite's p95
  beside it. The big answers (`queries.BIG_ANSWERS`) stay unjudged, as there: through this
  Python client their time is mostly its schema check of the answer, and the TypeScript client
  that judges them (`clients`) runs on SQLite only.

The SQLite series is the queries group's when it ran in the same run (`ctx.results`), measured
here otherwise. The workflow throughput on PostgreSQL is the `workers` group's (always run).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from sqlalchemy import create_engine, text

from tests.benchmarks import queries
from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, percentile
from tests.benchmarks.vaultgen import COMMON_WORDS, RARE_WORD
from tests.benchmarks.worker import run_worker
from tests.pg_server import PostgresServer, start_server
from weaver.cache import fts, pg_search

SECTION = "PostgreSQL beside SQLite"


def run(ctx: BenchContext) -> list[Figure]:
    notes = ctx.reference
    server = start_server()
    try:
        sqlite_runs, pg_runs, url = _index_both(ctx, server, notes)
        pg = _measure_queries(ctx, notes, url)
        agreement = top_five_figure(url, notes)
    finally:
        server.stop()
    sqlite = ctx.results.get(f"queries/{notes}") or _measure_queries(ctx, notes, None)
    ctx.results[f"postgres/queries/{notes}"] = pg
    figures = index_figures(sqlite_runs, pg_runs, notes)
    cases = (*queries.TOOL_CASES, *queries.EDIT_CASES)
    figures += [read_figure(case, pg[case.label], sqlite[case.label], notes) for case in cases]
    return [*figures, agreement]


def _index_both(
    ctx: BenchContext, server: PostgresServer, notes: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Cold indexes of the reference vault into SQLite and into a new PostgreSQL database, in
    turns; returns both series and the URL of the last (indexed) PostgreSQL database."""
    vault = str(ctx.vault(notes))
    sqlite_runs, pg_runs = [], []
    url = ""
    for _ in range(ctx.index_runs):
        sqlite_runs.append(run_worker("index", vault=vault, noop_runs=1))
        url = server.url(server.create_database())
        pg_runs.append(run_worker("index", vault=vault, noop_runs=1, database_url=url))
    for result in (*sqlite_runs, *pg_runs):
        if result["report"]["added"] != notes or result["report"]["errors"]:
            raise RuntimeError(f"index of {notes} notes went wrong: {result['report']}")
    print(
        f"  {notes:,} notes: SQLite {min(r['cold_seconds'] for r in sqlite_runs):.1f} s, "
        f"PostgreSQL {min(r['cold_seconds'] for r in pg_runs):.1f} s",
        file=sys.stderr,
    )
    return sqlite_runs, pg_runs, url


def _measure_queries(ctx: BenchContext, notes: int, database_url: str | None) -> dict[str, Any]:
    return run_worker(
        "queries",
        vault=str(ctx.vault(notes)),
        facts_file=str(ctx.facts_file(notes)),
        calls=ctx.calls,
        min_calls=5 if ctx.quick else queries.MIN_CALLS,
        database_url=database_url,
    )


def index_figures(
    sqlite_runs: list[dict[str, Any]], pg_runs: list[dict[str, Any]], notes: int
) -> list[Figure]:
    sqlite = min(r["cold_seconds"] for r in sqlite_runs)
    pg = min(r["cold_seconds"] for r in pg_runs)
    migrate = min(r["open_seconds"] for r in pg_runs)
    sqlite_mb = sqlite_runs[-1]["db_bytes"] / 1e6
    pg_mb = pg_runs[-1]["db_bytes"] / 1e6
    return [
        Figure(
            SECTION,
            f"full index, {notes:,} notes, cold: PostgreSQL to SQLite",
            sqlite / pg,
            "ratio",
            f"PostgreSQL {pg:.2f} s ({notes / pg:,.0f} notes/s; open and migrate {migrate:.2f} s "
            f"more), SQLite {sqlite:.2f} s ({notes / sqlite:,.0f} notes/s): {sqlite / pg:.0%} "
            f"of SQLite's rate (best of {len(pg_runs)})",
            None,  # the issue sets no bound: the ratio is the figure
            {
                "sqlite_seconds": [r["cold_seconds"] for r in sqlite_runs],
                "postgres_seconds": [r["cold_seconds"] for r in pg_runs],
                "postgres_open_seconds": [r["open_seconds"] for r in pg_runs],
            },
        ),
        Figure(
            SECTION,
            f"cache size, {notes:,} notes: PostgreSQL database beside SQLite file",
            pg_mb,
            "MB",
            f"{pg_mb:.0f} MB (pg_database_size, note texts included) vs {sqlite_mb:.0f} MB",
        ),
    ]


def read_figure(
    case: queries.ToolCase, pg: dict[str, Any], sqlite: dict[str, Any], notes: int
) -> Figure:
    """The queries group's row for `case` on PostgreSQL, judged the same way, with SQLite's
    round trip and tool time beside it."""
    fig = queries.tool_figure(case, pg, notes)
    sqlite95 = percentile(sqlite["seconds"], 95) * 1000
    sqlite_tool95 = percentile(sqlite["tool_seconds"], 95) * 1000
    pg_tool95 = percentile(pg["tool_seconds"], 95) * 1000
    big = case.label.removesuffix(queries.AFTER_AN_EDIT) in queries.BIG_ANSWERS
    why = "; unjudged: a big answer, judged through the TypeScript client on SQLite" if big else ""
    return replace(
        fig,
        section=SECTION,
        shown=f"p50 {fig.data['p50_ms']:.1f} · p95 {fig.value:.1f} ms, tool p95 {pg_tool95:.1f} "
        f"ms; SQLite p95 {sqlite95:.1f} ms, tool {sqlite_tool95:.1f} ms{why}",
        data={**fig.data, "sqlite_p95_ms": sqlite95, "sqlite_tool_p95_ms": sqlite_tool95},
    )


_FULL_RANKING = text(
    "SELECT note_path, ts_rank_cd(CAST(:weights AS real[]), document, q) AS rank "
    "FROM note_texts, to_tsquery('weaver_search', :query) AS q WHERE document @@ q "
    "ORDER BY rank DESC, note_path LIMIT 5"
)


def top_five_figure(url: str, notes: int) -> Figure:
    """How many of the bench's search queries find, on PostgreSQL, the top 5 a full
    `ts_rank_cd` ranking of every match finds (the same scores; the same paths beside)."""
    engine = create_engine(url)
    same_scores, same_paths, missed = 0, 0, []
    searched = (COMMON_WORDS, *queries.MIXED, RARE_WORD)
    try:
        with engine.connect() as conn:
            for query in searched:
                expression = fts.fts_query(query)
                assert expression is not None
                full = conn.execute(
                    _FULL_RANKING,
                    {
                        "weights": pg_search.RANK_WEIGHTS,
                        "query": pg_search.to_tsquery_text(expression),
                    },
                ).all()
                hits = fts.search(conn, expression, 5, 0).hits
                conn.rollback()
                # A hit's score is rounded to 6 places, a rank a float4.
                alike = len(hits) == len(full) and all(
                    abs(hit.score - rank) < 1e-5 for hit, (_, rank) in zip(hits, full, strict=True)
                )
                same_scores += alike
                same_paths += [hit.path for hit in hits] == [path for path, _ in full]
                if not alike:
                    missed.append(query)
    finally:
        engine.dispose()
    print(f"  top 5 as the full ranking's: {same_scores} of {len(searched)}", file=sys.stderr)
    return Figure(
        SECTION,
        f"search_notes top 5 against the full ranking, {notes:,} notes",
        same_scores,
        "queries",
        f"{same_scores} of {len(searched)} queries' top 5 hold the full ranking's scores "
        f"({same_paths} the same paths in the same order)"
        + (f"; not: {', '.join(missed)}" if missed else ""),
        Target(">=", len(searched), f"all {len(searched)}"),
        {"same_scores": same_scores, "same_paths": same_paths, "missed": missed},
    )
