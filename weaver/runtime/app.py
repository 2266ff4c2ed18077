"""The core objects every entry point needs, built once from `Settings`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from sqlalchemy import Engine

from weaver.cache import fts
from weaver.cache.db import open_cache_engine, open_engine, open_reader_engine
from weaver.cache.dialect import is_postgres
from weaver.config import Settings
from weaver.index.apart import ApartPasses
from weaver.index.indexer import Indexer
from weaver.semantic.search import SemanticIndex
from weaver.vault.events import EventBus
from weaver.vault.fs import CacheOnlyVault, Vault


@dataclass
class App:
    settings: Settings
    db: Engine  # the cache's SQLAlchemy engine; "engine" is the workflow engine
    vault: Vault
    bus: EventBus
    indexer: Indexer
    semantic: SemanticIndex  # loads its model on first use only
    # A reader's own writable engine for the workflow queue alone (the `executions` rows and
    # their jobs), on PostgreSQL: `db` stays read-only (`open_app(queue=True)`).
    queue_db: Engine | None = None

    def close(self) -> None:
        self.db.dispose()
        if self.queue_db is not None:
            self.queue_db.dispose()


def note_text(db: Engine, path: str) -> str | None:
    """A note's text as the cache keeps it (a PostgreSQL cache does; None elsewhere): what a
    reader's vault answers with, never having the files."""
    with db.connect() as conn:
        return fts.get_note_text(conn, path)


def _vault_here(settings: Settings, db: Engine) -> Vault:
    """The vault's files; where they are not on this host (a `weaver worker` elsewhere: the
    other commands insist on the folder), the notes' text as the cache keeps it (PostgreSQL
    does), with writes refused saying why."""
    if settings.vault.is_dir():
        return Vault(settings.vault, settings.ignore)
    why = (
        f"this worker has none of the vault's files (no folder {settings.vault} on this "
        "host): give it them at that path (a shared volume) to run workflows that write notes"
    )
    return CacheOnlyVault(settings.vault, settings.ignore, partial(note_text, db), why)


def reader_queues(settings: Settings) -> bool:
    """Whether a reader (`--no-vault`) with these settings queues workflow runs: on PostgreSQL,
    where a run is a row and a job that any worker takes, unless `read_only` is set. On SQLite
    a reader never writes the cache file, which is the writer's alone (docs/readers.md)."""
    return is_postgres(settings.db_url) and not settings.read_only


def open_app(
    settings: Settings,
    check: bool = False,
    files: bool = True,
    queue: bool = False,
    lasting: bool = False,
) -> App:
    """Open (and migrate) the cache for the configured vault; with `check`, a corrupt cache is
    moved aside and rebuilt first (`cache.recovery`). Without `files`, a reader's App: the
    cache opened read-only as it is, and a vault whose files are never opened; with `queue`
    too (see `reader_queues`), a second engine that may write, for the workflow queue only
    (least privilege: the notes' tables are read through a read-only session). `lasting`: a
    process that keeps running after its first index (the daemon, `weaver serve`), whose big
    reconciles run in a child process so that their burst of memory goes with it
    (`index.apart`)."""
    queue_db = None
    if files:
        db = open_cache_engine(settings.db_url, check=check)
        vault = _vault_here(settings, db)
    else:
        db = open_reader_engine(settings.db_url)
        vault = CacheOnlyVault(settings.vault, settings.ignore, partial(note_text, db))
        queue_db = open_engine(settings.db_url) if queue else None
    bus = EventBus()
    apart = (
        ApartPasses(settings.db_url, settings.log_level, settings.log_format)
        if lasting and files
        else None
    )
    indexer = Indexer(db, vault, bus, parse_workers=settings.index_workers, apart=apart)
    semantic = SemanticIndex(
        settings.embedding_model,
        settings.embedding_model_path,
        settings.embedding_threads,
        settings.embedding_cache_dir,
    )
    return App(settings, db, vault, bus, indexer, semantic, queue_db)
