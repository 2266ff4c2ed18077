"""Attachment text: note freshness while a real `weaver daemon` extracts 1,000 generated PDFs
(mixed sizes, one in twenty malformed), as a ratio against note freshness without PDFs in the
same run and the same daemon (issue 38: extraction never delays note freshness).

The reference vault is copied (the other groups keep theirs untouched). The daemon watches the
copy; the freshness trials of `freshness` run first without PDFs, then the PDFs are written,
and once the daemon has recorded them (the extractor starts on them at once) the trials run
again while they are read. How many PDFs were read meanwhile is reported, to show the
extraction was under way, and at what rate. Once all are read, the search behind
search_notes is timed over the notes and the PDFs' pages together (the read-tool target).
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from tests.attachments.pdfs import text_pdf
from tests.benchmarks.context import BenchContext
from tests.benchmarks.freshness import _reader, _trial, running_daemon
from tests.benchmarks.report import Figure, Target, latency_figure, percentile
from tests.benchmarks.vaultgen import COMMON_WORDS
from weaver.config import Settings
from weaver.runtime.app import open_app
from weaver.runtime.state import ServerState
from weaver.search import SearchRequest, find_notes

PDFS = 1_000
BROKEN_EVERY = 20
PAGES = (1, 2, 5, 20, 80)  # a mix of sizes, most small
RATIO_TARGET = Target("<=", 1.5, "p95 ≤ 1.5× without PDFs")
RECORDED_WITHIN_S = 120.0
READ_WITHIN_S = 600.0
SEARCH_TARGET = Target("<=", 20, "p95 ≤ 20 ms")
SEARCH_CALLS = 50
# What the searches ask: a word on every PDF page (and in some notes), a word of one PDF, a word
# most notes hold (no PDF).
SEARCHES = {
    "a word on every PDF page": "topic",
    "a word of one PDF": '"Document 123"',
    "two words most notes hold": COMMON_WORDS,
}


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.workdir / "vault-attachments"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(ctx.vault(ctx.reference), vault, ignore=shutil.ignore_patterns(".weaver"))
    sample = ctx.facts(ctx.reference).sample
    with running_daemon(vault, ctx.workdir), closing(_reader(vault)) as db:
        before = _samples(ctx, vault, db, sample, 0)
        _write_pdfs(vault / "Library", random.Random(ctx.seed))
        _wait_recorded(db)
        read_before, started = _count(db, "attachment_texts"), time.perf_counter()
        during = _samples(ctx, vault, db, sample, ctx.trials)
        read = _count(db, "attachment_texts") - read_before
        elapsed = time.perf_counter() - started
        _wait_read(db)
        searches = _time_searches(vault, ctx)
    shutil.rmtree(vault, ignore_errors=True)
    ratio = percentile(during, 95) / percentile(before, 95)
    section = "attachments"
    return [
        latency_figure(section, f"note freshness, {ctx.reference:,} notes, no PDFs", before, None),
        latency_figure(section, f"note freshness while {PDFS:,} PDFs extract", during, None),
        Figure(
            section,
            "note freshness with PDFs extracting / without",
            ratio,
            "×",
            f"{ratio:.2f}× (p95)",
            RATIO_TARGET,
        ),
        Figure(
            section,
            "PDFs read during those trials",
            read,
            "PDFs",
            f"{read:,} of {PDFS:,} in {elapsed:.0f} s ({read / elapsed:.1f}/s)",
        ),
        *(
            latency_figure(
                section,
                f"find_notes (search_notes' core) {label}, {ctx.reference:,} notes + {PDFS:,} PDFs",
                seconds,
                SEARCH_TARGET,
            )
            for label, seconds in searches.items()
        ),
    ]


def _samples(
    ctx: BenchContext, vault: Path, db: sqlite3.Connection, sample: Sequence[str], first: int
) -> list[float]:
    """Every kind of change, pooled: what a person sees of freshness."""
    seconds: list[float] = []
    for i in range(first, first + ctx.trials):
        seconds += [s for _, s in _trial(vault, db, sample[i % len(sample)], i)]
    return seconds


def _wait_read(db: sqlite3.Connection) -> None:
    deadline = time.monotonic() + READ_WITHIN_S
    while _count(db, "attachment_texts") < PDFS:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the daemon did not read the PDFs in {READ_WITHIN_S:.0f} s")
        time.sleep(0.2)


def _time_searches(vault: Path, ctx: BenchContext) -> dict[str, list[float]]:
    """`find_notes` in this process on the daemon's cache, which holds every PDF's text by now:
    the search behind search_notes, without the MCP round trip (`queries` measures that)."""
    app = open_app(Settings(vault=vault))
    try:
        sources = ServerState(app, watch=False).search_sources
        timings: dict[str, list[float]] = {}
        for label, query in SEARCHES.items():
            request = SearchRequest(query, mode="keyword")
            found = find_notes(sources, request)  # warm: the name index is built once
            assert found.attachment_total or label == "two words most notes hold", label
            seconds = []
            for _ in range(SEARCH_CALLS):
                began = time.perf_counter()
                find_notes(sources, request)
                seconds.append(time.perf_counter() - began)
            timings[label] = seconds
        return timings
    finally:
        app.close()


def _write_pdfs(folder: Path, rng: random.Random) -> None:
    folder.mkdir()
    for i in range(PDFS):
        if i % BROKEN_EVERY == 0:
            data = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R" + bytes(rng.randbytes(64))
        else:
            pages = rng.choice(PAGES)
            data = text_pdf(
                [f"Document {i} page {p} about topic {rng.random():.6f}" for p in range(pages)]
            )
        (folder / f"doc-{i:04d}.pdf").write_bytes(data)


def _wait_recorded(db: sqlite3.Connection) -> None:
    deadline = time.monotonic() + RECORDED_WITHIN_S
    while _count(db, "attachments", "path LIKE 'Library/%'") < PDFS:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the daemon did not record the PDFs in {RECORDED_WITHIN_S:.0f} s")
        time.sleep(0.1)


def _count(db: sqlite3.Connection, table: str, where: str = "1") -> int:
    return int(db.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0])
