"""`weaver index`: bring the cache in step with the vault, or say who keeps it."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from weaver.cli.exits import add_command
from weaver.errors import CacheError, DaemonError

if TYPE_CHECKING:  # imported when the command runs, not to build the parser
    from rich.console import Console

    from weaver.config import Settings


def add_index_command(commands: Any) -> None:
    """`weaver index`, registered on `weaver.cli.build_parser`'s subparsers."""
    index = add_command(
        commands,
        "index",
        "bring the index up to date with the vault",
        "Reads the notes that changed since the last run (all of them the first time) and\n"
        "prints what changed. On a terminal it shows progress, and a warning for each note\n"
        "it could not parse. While `weaver daemon` or `weaver serve` keeps the index fresh,\n"
        "it says so and leaves the index to them.",
    )
    index.add_argument(
        "--full", action="store_true", help="re-read every note, changed or not (slower)"
    )
    index.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    index.set_defaults(command=cmd_index)


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    from rich.console import Console

    from weaver.cli.console import IndexDisplay, format_index_summary
    from weaver.runtime.app import open_app
    from weaver.runtime.locks import writer_lock_for

    lock = writer_lock_for(settings)
    try:
        if not lock.try_acquire():
            return _show_kept_cache(args, settings, lock.holder())
        app = open_app(settings, check=True)
        try:
            console = Console(stderr=True)
            if console.is_terminal and not console.is_dumb_terminal:
                with IndexDisplay(console) as display, _logging_through(console, settings):
                    report = app.indexer.reconcile(full=args.full, observer=display)
            else:
                report = app.indexer.reconcile(full=args.full)
        finally:
            app.close()
    finally:
        lock.close()
    summary = report.summary()
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_index_summary(settings.vault, summary))
    return 0


@contextmanager
def _logging_through(console: Console, settings: Settings) -> Iterator[None]:
    """Log lines printed through the console, so they land above a progress bar, not on it."""
    from weaver.cli.console import log_stream
    from weaver.log import configure_logging

    configure_logging(settings.log_level, settings.log_format, log_stream(console))
    try:
        yield
    finally:
        configure_logging(settings.log_level, settings.log_format)


def _show_kept_cache(args: argparse.Namespace, settings: Settings, holder: str) -> int:
    """Another process (a daemon or `serve`) writes the cache: show its state and leave it be."""
    from sqlalchemy.exc import SQLAlchemyError

    from weaver.cache import read
    from weaver.cache.db import open_engine, schema_revision
    from weaver.cli.console import format_kept_cache

    if args.full:
        raise DaemonError(
            f"cannot re-read every note now: process {holder} (a weaver daemon or serve) keeps "
            "this cache and is its only writer. Stop it, run `weaver index --full`, then start "
            "it again"
        )
    db = open_engine(settings.db_url)
    notes, last_change = 0, None
    try:
        if schema_revision(db) is not None:  # else the writer is still creating it
            with db.connect() as conn:
                notes, last_change = read.count_notes(conn), read.last_updated(conn)
    except SQLAlchemyError as exc:
        raise CacheError(f"cannot read the cache at {settings.db_url}: {exc}") from exc
    finally:
        db.dispose()
    if args.json:
        pid: int | str = int(holder) if holder.isdigit() else holder
        print(json.dumps({"kept_by": pid, "notes": notes, "last_updated": last_change}))
    else:
        print(format_kept_cache(settings.vault, holder, notes, last_change, _now_ms()))
    return 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
