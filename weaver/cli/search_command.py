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
    from weaver.search import SearchResults


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
        help="first embed the notes not embedded yet and read the PDFs not read yet (slow on a "
        "big vault; a daemon does both too)",
    )
    search.add_argument("--json", action="store_true", help="print the results as JSON")
    search.set_defaults(command=cmd_search)


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    """`weaver search`: the same search as the `search_notes` tool, from a shell."""
    from weaver.cache.graph import names_cache
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
        unread = _unread_pdfs(app)
    finally:
        app.close()
    if args.json:
        print(json.dumps({**_as_json(found), "unreadPdfs": unread}))
        return 0
    _print_found(found, args.update)
    if unread:
        pdfs = "1 PDF" if unread == 1 else f"{unread} PDFs"
        print(f"({pdfs} not read yet: `--update` reads them first, unless a daemon is)")
    return 0


def _as_json(found: SearchResults) -> dict[str, Any]:
    notes = [
        {"path": h.path, "title": h.title, "score": h.score, "snippet": h.snippet}
        for h in found.hits
    ]
    pages = [
        {"path": h.path, "page": h.page, "score": h.score, "snippet": h.snippet}
        for h in found.attachment_hits
    ]
    return {
        "mode": found.mode,
        "coverage": found.coverage,
        "progress": found.progress,
        "results": notes,
        "attachments": pages,
        "attachmentTotal": found.attachment_total,
        "attachmentText": found.attachment_text,
    }


def _print_found(found: SearchResults, updating: bool) -> None:
    """The notes found, then the PDF pages: a passage only in a PDF is found from a shell too."""
    from weaver.cli.console import format_passage, format_table

    print(f"{found.mode} search" + (f" ({found.coverage})" if found.coverage else ""))
    if found.progress:
        print(found.progress)
    notes = [(f"{h.score:.3f}", h.path, format_passage(h.snippet)) for h in found.hits]
    print(format_table(("score", "path", "passage"), notes) if notes else "no notes found")
    pages = [(h.path, str(h.page), format_passage(h.snippet)) for h in found.attachment_hits]
    if pages:
        print(f"\nPDF pages ({len(pages)} of {found.attachment_total}):")
        print(format_table(("path", "page", "passage"), pages))
    elif found.attachment_text:
        print(f"\n{found.attachment_text}")
    if not found.complete and not updating:
        print("(`--update` embeds the rest first, unless a running daemon is doing it)")


def _wait_for_model(app: App) -> None:
    """A shell has nothing else to do meanwhile: the model asked for is waited for (a first
    run builds it, a minute or so), where a server answers with its progress."""
    from weaver.errors import SemanticUnavailableError

    try:
        app.semantic.model(wait=None)
    except SemanticUnavailableError:
        return  # not installed or cannot load: the search says so


def _unread_pdfs(app: App) -> int:
    """PDFs whose text is not in the cache yet (0 where they cannot be read here): a shell's
    search finds PDF text only once a daemon or `--update` has read it."""
    from weaver.attachments.pdf_text import pdf_available
    from weaver.cache.attachment_text import count_pending

    if not pdf_available():
        return 0
    with app.db.connect() as conn:
        return count_pending(conn)


def _refresh_for_search(settings: Settings, app: App, embed: bool) -> None:
    """The cache brought up to date first, as `weaver tags list` does, and with `embed` the
    notes not yet embedded and the PDFs not yet read too; unless a daemon or server keeps them
    fresh already."""
    from weaver.attachments.pdf_text import pdf_available
    from weaver.index.attachment_text import extract_pending
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
        if embed and pdf_available():
            extract_pending(app.db, app.vault)
    finally:
        lock.close()
