"""Editing: renaming a tag carried by one note in ten across the reference vault, and single-note
edits (append, a section, a frontmatter key), each timed until the cache shows the change.

Runs on a copy of the reference vault and its cache (the vault other groups measure stays as
generated; the copy is indexed first when `--only editing` left it without a cache). One note in
ten gets the tag `bench-rename` (half in the frontmatter, half inline) and the cache is brought
up to date; the rename is then timed end to end: plan (read every candidate), journal, one
atomic write per note, cache sync. Single-note edits go through `patch_note` as the MCP tools
call it, in the process holding the cache's writer role.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, latency_figure
from weaver.config import Settings
from weaver.edits import notes, patches, tags
from weaver.runtime import cache_sync
from weaver.runtime.app import App, open_app

RENAME_TARGET = Target("<=", 5.0, "≤ 5 s")
EDIT_TARGET = Target("<=", 30, "p95 ≤ 30 ms")
TAGGED_EVERY = 10
TAG, NEW_TAG = "bench-rename", "bench-renamed"


def run(ctx: BenchContext) -> list[Figure]:
    vault = _copy_vault(ctx.vault(ctx.reference), ctx.workdir / "vault-editing")
    app = open_app(Settings(vault=vault))
    try:
        app.indexer.reconcile()  # a no-op when the indexing group built the cache already
        tagged = _tag_notes(app, vault)
        rename = _time_rename(app)
        edits = _time_edits(app, ctx.facts(ctx.reference).sample, ctx.calls)
    finally:
        app.close()
        shutil.rmtree(vault, ignore_errors=True)
    notes_count = ctx.reference
    figures = [
        Figure(
            "editing",
            f"rename_tag carried by {tagged:,} of {notes_count:,} notes",
            rename,
            "s",
            f"{rename:.2f} s",
            RENAME_TARGET,
        )
    ]
    for kind, samples in edits.items():
        name = f"{kind}, {notes_count:,} notes (cache synced)"
        figures.append(latency_figure("editing", name, samples, EDIT_TARGET))
    return figures


def _copy_vault(source: Path, target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    return target


def _sync(app: App) -> notes.CacheSync:
    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(app, expected, holds_writer=True)

    return sync


def _tag_notes(app: App, vault: Path) -> int:
    paths = sorted(
        str(p.relative_to(vault)) for p in vault.rglob("*.md") if ".weaver" not in p.parts
    )
    chosen = paths[::TAGGED_EVERY]
    add = patches.tags_transform(add=[TAG])
    inline = patches.insert_transform("append", f"Tagged #{TAG} for the bench")
    hashes: dict[str, str | None] = {}

    def collect(expected: Mapping[str, str | None]) -> bool:
        hashes.update(expected)
        return True

    for i, path in enumerate(chosen):
        transform = add if i % 2 == 0 else inline
        patches.patch_note(app, path, transform, expected_hash=None, sync=collect)
    _sync(app)(hashes)
    return len(chosen)


def _time_rename(app: App) -> float:
    started = time.perf_counter()
    result = tags.rename_tag(app, TAG, NEW_TAG, dry_run=False, sync=_sync(app))
    seconds = time.perf_counter() - started
    if not result.cache_synced or any(o.status != tags.WRITTEN for o in result.outcomes):
        raise RuntimeError(f"the bench rename did not complete: {result.outcomes[:5]}")
    return seconds


def _time_edits(app: App, sample: tuple[str, ...], calls: int) -> dict[str, list[float]]:
    kinds: dict[str, patches.Transform] = {
        "edit_file append": patches.insert_transform("append", "- one more line"),
        "update_frontmatter set": patches.frontmatter_transform(
            patches.FrontmatterChange(set_={"reviewed": True})
        ),
        "replace_in_file literal": patches.replace_transform(
            patches.Replace("one more line", "one line more", allow_no_match=True)
        ),
    }
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    for i in range(calls):
        path = sample[i % len(sample)]
        for kind, transform in kinds.items():
            started = time.perf_counter()
            patches.patch_note(app, path, transform, expected_hash=None, sync=_sync(app))
            samples[kind].append(time.perf_counter() - started)
    return samples
