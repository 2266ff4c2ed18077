"""`weaver search`: the search behind the `search_notes` tool, from a shell."""

from __future__ import annotations

import argparse
import json
from typing import Any

from weaver.cli.console import add_command, clip, format_table
from weaver.config import Settings
from weaver.host.app import App, open_app


def add_search_command(commands: Any) -> None:
    search = add_command(
        commands,
        "search",
        "search the notes by words or by meaning (semantic, hybrid)",
        "The search behind the `search_notes` tool, from a shell: keyword search finds the\n"
        "words; semantic and hybrid search (with the `semantic` extra installed) find notes\n"
        "that mean what the query says, in other words.",
    )
    search.add_argument("query", help="words, a question, or a description of a note")
    search.add_argument(
        "--mode",
        choices=["keyword", "semantic", "hybrid"],
        help="default: hybrid once every note is embedded, keyword otherwise",
    )
    search.add_argument("--limit", type=int, default=10, help="results shown (default 10)")
    search.add_argument("--directory", help="only notes in this folder (and its subfolders)")
    search.add_argument("--tag", help="only notes with this tag (nested tags too)")
    search.add_argument(
        "--update",
        action="store_true",
        help="first embed the notes not embedded yet (slow on a big vault; a daemon does it too)",
    )
    search.add_argument("--json", action="store_true", help="print the results as JSON")
    search.set_defaults(command=cmd_search)


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    """`weaver search`: the same search as the `search_notes` tool, from a shell."""
    from weaver.cache import fts
    from weaver.cache.read import read_snapshot
    from weaver.markdown.patterns import normalize_tag
    from weaver.semantic.pages import MeaningHit, choose_mode, search_by_meaning

    limit = max(1, min(args.limit, 100))
    folder = args.directory.strip("/") if args.directory else None
    tag = normalize_tag(args.tag.strip().lstrip("#")) if args.tag else None  # as the tools
    app = open_app(settings)
    try:
        _refresh_for_search(settings, app, embed=args.update)
        with read_snapshot(app.db) as conn:
            mode = choose_mode(app, conn, args.mode)
            if mode == "keyword":
                expression = fts.fts_query(args.query)
                found = (
                    fts.search(conn, expression, limit, 0, directory=folder, tag=tag)
                    if expression
                    else fts.SearchPage([], 0)
                )
                hits = [
                    MeaningHit(h.path, h.title, h.snippet, h.score, (), h.modified)
                    for h in found.hits
                ]
                coverage, partial = None, False
            else:
                page = search_by_meaning(app, conn, args.query, mode, limit, 0, folder, tag)
                hits, coverage, partial = page.hits, page.coverage, not page.complete
    finally:
        app.close()
    if args.json:
        rows = [
            {"path": h.path, "title": h.title, "score": h.score, "snippet": h.snippet} for h in hits
        ]
        print(json.dumps({"mode": mode, "coverage": coverage, "results": rows}))
        return 0
    print(f"{mode} search" + (f" ({coverage})" if coverage else ""))
    table = [
        (
            f"{h.score:.3f}",
            h.path,
            clip(_unmarked(h.snippet), 60),
        )
        for h in hits
    ]
    print(format_table(("score", "path", "passage"), table) if table else "no notes found")
    if partial and not args.update:
        print("(`--update` embeds the rest first, unless a running daemon is doing it)")
    return 0


def _unmarked(snippet: str) -> str:
    return snippet.replace("<mark>", "").replace("</mark>", "")


def _refresh_for_search(settings: Settings, app: App, embed: bool) -> None:
    """The cache brought up to date first, as `weaver tags list` does, and with `embed` the
    notes not yet embedded too; unless a daemon or server keeps both fresh already."""
    from weaver.host.locks import writer_lock_for
    from weaver.semantic.model import semantic_installed
    from weaver.semantic.worker import embed_pending

    lock = writer_lock_for(settings)
    try:
        if not lock.try_acquire():
            return
        app.indexer.reconcile()
        if embed and settings.semantic and semantic_installed():
            embed_pending(app.db, app.semantic)
    finally:
        lock.close()
