"""`weaver search`: the search behind the `search_notes` tool, from a shell."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from weaver.cli.counts import positive
from weaver.cli.exits import add_command

if TYPE_CHECKING:  # imported when the command runs, not to build the parser
    from weaver.config import Settings
    from weaver.runtime.app import App


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
    search.add_argument("--limit", type=positive, default=10, help="results shown (default 10)")
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
    from weaver.cache.graph import names_cache
    from weaver.cli.console import format_passage, format_table
    from weaver.mcp_server.arguments import normalize_directory, tag_key
    from weaver.runtime.app import open_app
    from weaver.search import SearchRequest, SearchSources, find_notes

    request = SearchRequest(
        args.query,
        args.mode,
        normalize_directory(args.directory),
        tag_key(args.tag) if args.tag else None,  # as the tools
        limit=max(1, min(args.limit, 100)),
    )
    app = open_app(settings)
    try:
        _refresh_for_search(settings, app, embed=args.update)
        if args.mode is not None and args.mode != "keyword":
            _wait_for_model(app)
        sources = SearchSources(app.db, names_cache().get, app.semantic, settings.semantic)
        found = find_notes(sources, request)
    finally:
        app.close()
    hits, mode, coverage = found.hits, found.mode, found.coverage
    if args.json:
        rows = [
            {"path": h.path, "title": h.title, "score": h.score, "snippet": h.snippet} for h in hits
        ]
        answer = {"mode": mode, "coverage": coverage, "progress": found.progress, "results": rows}
        print(json.dumps(answer))
        return 0
    print(f"{mode} search" + (f" ({coverage})" if coverage else ""))
    if found.progress:
        print(found.progress)
    table = [(f"{h.score:.3f}", h.path, format_passage(h.snippet)) for h in hits]
    print(format_table(("score", "path", "passage"), table) if table else "no notes found")
    if not found.complete and not args.update:
        print("(`--update` embeds the rest first, unless a running daemon is doing it)")
    return 0


def _wait_for_model(app: App) -> None:
    """A shell has nothing else to do meanwhile: the model asked for is waited for (a first
    run builds it, a minute or so), where a server answers with its progress."""
    from weaver.errors import SemanticUnavailableError

    try:
        app.semantic.model(wait=None)
    except SemanticUnavailableError:
        return  # not installed or cannot load: the search says so


def _refresh_for_search(settings: Settings, app: App, embed: bool) -> None:
    """The cache brought up to date first, as `weaver tags list` does, and with `embed` the
    notes not yet embedded too; unless a daemon or server keeps both fresh already."""
    from weaver.runtime.locks import writer_lock_for
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
