"""Semantic search figures: retrieval quality on the real corpora, embedding speed, latency,
freshness of vectors after an edit, and memory with the model loaded.

- Quality: the queries of `semantic_queries.json` (paraphrases and questions, each with the
  notes that answer it) run against kepano-obsidian and tasks-demo, read in place with their
  caches in the workdir. recall@5 and MRR (first relevant rank in the top 10) per mode.
- Speed: the chunks of a sample of the reference vault are embedded with 2 threads; chunks/s,
  and the time the whole reference vault's chunks would take at that rate.
- Latency at the reference size: the vault's notes get vectors by cycling the sample's real
  vectors (a matrix product costs the same whatever the values; embedding 10,000 notes here
  would take longer than the whole bench), and `search_notes` hybrid and `get_similar_notes`
  run against it; each query is embedded by the model for real.
- After one edit: write a note, index it, embed the pending notes, find it by meaning.
- RSS: a fresh process loads the model and the reference vault's vectors and answers a query.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import select

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, latency_figure
from tests.corpora import CORPORA
from weaver.cache import vectors
from weaver.cache.models import Note
from weaver.cache.vectors import ChunkVector, EmbeddedNote
from weaver.config import Settings
from weaver.host.app import App, open_app
from weaver.semantic.chunks import chunk_note
from weaver.semantic.model import ENABLE_HINT, semantic_installed
from weaver.semantic.search import SemanticIndex
from weaver.semantic.worker import embed_pending

SECTION = "semantic search"
QUERIES = Path(__file__).with_name("semantic_queries.json")
MODES = ("keyword", "semantic", "hybrid")
SAMPLE_NOTES = 60
QUICK_SAMPLE_NOTES = 30
EMBED_TARGET_S = 300.0


def run(ctx: BenchContext) -> list[Figure]:
    if not semantic_installed():
        print(f"  skipped: semantic search is not installed ({ENABLE_HINT})", file=sys.stderr)
        return []
    index = SemanticIndex(threads=2)
    index.model()
    figures = quality_figures(ctx, index)
    app = _open(ctx.vault(ctx.reference), ctx.workdir / "semantic-reference.db", index)
    try:
        app.indexer.reconcile()
        sample = _sample_paths(app, QUICK_SAMPLE_NOTES if ctx.quick else SAMPLE_NOTES)
        speed, real = speed_figure(app, index, sample, ctx.reference)
        figures.append(speed)
        _fill_vectors(app, index, real)
        figures += latency_figures(app, ctx)
        figures.append(edit_figure(app, index))
    finally:
        app.close()
    figures.append(rss_figure(ctx))
    return figures


def _open(vault: Path, db: Path, index: SemanticIndex) -> App:
    app = open_app(Settings(vault=vault, database_url=f"sqlite:///{db}", read_only=True))
    app.semantic = index
    return app


# ---------------------------------------------------------------- quality


def quality_figures(ctx: BenchContext, index: SemanticIndex) -> list[Figure]:
    queries = json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]
    ranks: dict[str, list[int | None]] = {mode: [] for mode in MODES}
    for vault in sorted({q["vault"] for q in queries}):
        app = _open(CORPORA / vault, ctx.workdir / f"semantic-{vault}.db", index)
        try:
            app.indexer.reconcile()
            embed_pending(app.db, index)
            for q in (q for q in queries if q["vault"] == vault):
                for mode in MODES:
                    ranks[mode].append(_first_rank(app, mode, q["query"], set(q["expected"])))
        finally:
            app.close()
    figures = []
    recall = {mode: _recall(ranks[mode], 5) for mode in MODES}
    for mode in MODES:
        target = Target(">=", recall["keyword"] + 1e-9, "> keyword") if mode == "hybrid" else None
        mrr = sum(1 / r for r in ranks[mode] if r) / len(ranks[mode])
        figures.append(
            Figure(
                SECTION,
                f"{mode}: recall@5 and MRR, {len(ranks[mode])} paraphrase queries",
                recall[mode],
                "",
                f"recall@5 {recall[mode]:.2f} · MRR {mrr:.2f}",
                target,
                {"recall_at_5": recall[mode], "mrr": mrr, "ranks": ranks[mode]},
            )
        )
    return figures


def _first_rank(app: App, mode: str, query: str, expected: set[str]) -> int | None:
    from weaver.cache import fts
    from weaver.cache.read import read_snapshot

    with read_snapshot(app.db) as conn:
        if mode == "keyword":
            expression = fts.fts_query(query)
            found = fts.search(conn, expression, 10, 0) if expression else fts.SearchPage([], 0)
            paths = [h.path for h in found.hits]
        elif mode == "semantic":
            paths = [h.path for h in app.semantic.search(conn, query, 10, 0).hits]
        else:
            paths = [h.path for h in app.semantic.hybrid(conn, query, 10, 0).hits]
    return next((i for i, path in enumerate(paths, start=1) if path in expected), None)


def _recall(ranks: list[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


# ---------------------------------------------------------------- speed


def _sample_paths(app: App, count: int) -> list[str]:
    with app.db.connect() as conn:
        paths = sorted(conn.execute(select(Note.path)).scalars())
    return random.Random(7).sample(paths, min(count, len(paths)))


def speed_figure(
    app: App, index: SemanticIndex, sample: list[str], notes: int
) -> tuple[Figure, list[list[ChunkVector]]]:
    """Chunks/s on the sample, and the sample's chunks with their real vectors."""
    with app.db.connect() as conn:
        sources = vectors.note_sources(conn, sample)
        all_sources = vectors.note_sources(conn, list(conn.execute(select(Note.path)).scalars()))
    chunked = [chunk_note(s.title, s.body, s.aliases, s.tags) for s in sources]
    texts = [c.text for chunks in chunked for c in chunks]
    total_chunks = sum(len(chunk_note(s.title, s.body, s.aliases, s.tags)) for s in all_sources)
    started = time.perf_counter()
    embedded = index.model().embed_texts(texts)
    rate = len(texts) / (time.perf_counter() - started)
    projected = total_chunks / rate
    real: list[list[ChunkVector]] = []
    row = 0
    for chunks in chunked:
        real.append(
            [ChunkVector(c.heading, c.body, embedded[row + i]) for i, c in enumerate(chunks)]
        )
        row += len(chunks)
    figure = Figure(
        SECTION,
        f"embedding from scratch, {notes:,} notes ({total_chunks:,} chunks), 2 threads",
        projected,
        "s",
        f"{rate:.0f} chunks/s → {projected / 60:.1f} min (measured on {len(texts)} chunks)",
        Target("<=", EMBED_TARGET_S, "≤ 5 min"),
        {"chunks_per_s": rate, "chunks": total_chunks, "sample_chunks": len(texts)},
    )
    return figure, real


def _fill_vectors(app: App, index: SemanticIndex, real: list[list[ChunkVector]]) -> None:
    """Every note of the vault gets a sample note's real vectors, cycled."""
    with app.db.connect() as conn:
        rows = conn.execute(select(Note.path, Note.content_hash)).all()
    for start in range(0, len(rows), 500):
        batch = [
            EmbeddedNote(path, content_hash, real[(start + i) % len(real)])
            for i, (path, content_hash) in enumerate(rows[start : start + 500])
        ]
        with app.db.connect() as conn:
            vectors.store_embeddings(conn, batch, index.model_id)


# ---------------------------------------------------------------- latency, edits, memory

SEARCHES = (
    "how do I keep my notes in sync between devices",
    "ideas about the structure of networks",
    "a meeting to plan the next release",
    "notes on learning and memory",
    "what to cook for dinner",
)


def latency_figures(app: App, ctx: BenchContext) -> list[Figure]:
    from weaver.cache.read import read_snapshot

    calls = 30 if ctx.quick else 100
    with read_snapshot(app.db) as conn:
        app.semantic.matrix(conn)  # loaded once per vectors version, as a server keeps it
        paths = _sample_paths(app, calls)
    hybrid: list[float] = []
    similar: list[float] = []
    for i in range(calls):
        with read_snapshot(app.db) as conn:
            started = time.perf_counter()
            app.semantic.hybrid(conn, SEARCHES[i % len(SEARCHES)] + f" {i}", 20, 0)
            hybrid.append(time.perf_counter() - started)
            started = time.perf_counter()
            linked = vectors.linked_paths(conn, paths[i])
            app.semantic.similar(conn, paths[i], 10, linked)
            similar.append(time.perf_counter() - started)
    notes = f"{ctx.reference:,} notes"
    target = Target("<=", 50.0, "p95 ≤ 50 ms")
    return [
        latency_figure(SECTION, f"search_notes hybrid, {notes}", hybrid, target),
        latency_figure(SECTION, f"get_similar_notes unlinked, {notes}", similar, target),
    ]


def edit_figure(app: App, index: SemanticIndex) -> Figure:
    from weaver.cache.read import read_snapshot

    note = app.vault.root / "semantic-bench-edit.md"
    started = time.perf_counter()
    note.write_text("# Tide tables\nThe moon's pull makes the oceans rise and fall twice a day.\n")
    try:
        app.indexer.apply_paths([note.name])  # what the watcher does with one changed file
        embed_pending(app.db, index)
        with read_snapshot(app.db) as conn:
            hits = index.search(conn, "why the sea level goes up and down each day", 5, 0).hits
        elapsed = time.perf_counter() - started
        found = any(h.path == "semantic-bench-edit.md" for h in hits)
    finally:
        note.unlink()
        app.indexer.apply_paths([note.name])
    return Figure(
        SECTION,
        "one edit visible in semantic results (index + embed + search)",
        elapsed if found else float("inf"),
        "s",
        f"{elapsed:.2f} s" + ("" if found else " (NOT FOUND in the top 5)"),
        Target("<=", 2.0, "≤ 2 s"),
    )


# VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's peak at fork, the bench's.
_RSS_SCRIPT = """
import re, sys
from pathlib import Path
from weaver.cache.db import open_engine
from weaver.cache.read import read_snapshot
from weaver.semantic.search import SemanticIndex
index = SemanticIndex(threads=2)
db = open_engine(sys.argv[1])
with read_snapshot(db) as conn:
    index.hybrid(conn, "how do I keep my notes in sync between devices", 20, 0)
status = Path("/proc/self/status").read_text()
print(int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) / 1024)
"""


def rss_figure(ctx: BenchContext) -> Figure:
    url = f"sqlite:///{ctx.workdir / 'semantic-reference.db'}"
    out = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, url], capture_output=True, text=True, check=True
    )
    mb = float(out.stdout.strip().splitlines()[-1])
    return Figure(
        SECTION,
        f"peak RSS, model loaded + {ctx.reference:,} notes' vectors, one hybrid search",
        mb,
        "MB",
        f"{mb:.0f} MB",
        Target("<=", 400.0, "≤ 400 MB"),
        {"rss_mb": mb},
    )
