"""`weaver edits PATH`, `weaver undo PATH [--edit ID]` and `weaver audit`: a note's edits by
Weaver, undoing one, and which client made each write; kept apart from `weaver.cli` (which
registers them) as a thin edge over `weaver.edits.history` and `weaver.edits.audit`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from weaver.cli.counts import non_negative, positive
from weaver.cli.exits import add_command
from weaver.cli.tag_commands import fresh_app

if TYPE_CHECKING:  # imported when a command runs, not to build the parser
    from weaver.config import Settings


def add_edit_commands(commands: Any) -> None:
    """`weaver edits` and `weaver undo`, registered on `weaver.cli.build_parser`'s subparsers."""
    listing = add_command(
        commands,
        "edits",
        "list a note's recent edits by Weaver",
        "Every write by Weaver (MCP tools, workflows' recovery, `weaver` commands) keeps what it\n"
        "replaced for 30 days: this lists a note's, newest first, with the id `weaver undo`\n"
        "takes. Saves made in Obsidian or elsewhere are not Weaver's and are not listed.",
    )
    listing.add_argument("path", help="the note, vault-relative (Projects/Plan.md)")
    listing.add_argument("--limit", type=positive, default=20, help="how many (default 20)")
    listing.add_argument("--json", action="store_true", help="print the list as JSON")
    listing.set_defaults(command=cmd_edits)
    undo = add_command(
        commands,
        "undo",
        "put a note back as it was before one of Weaver's edits",
        "Without --edit, undoes the note's latest edit by Weaver. The note must still be as\n"
        "that edit left it (nothing written since is thrown away) unless --expected-hash names\n"
        "its hash now. The undo is itself an edit, listed by `weaver edits` and undoable.",
    )
    undo.add_argument("path", help="the note, vault-relative")
    undo.add_argument("--edit", type=int, default=None, help="the edit id (from `weaver edits`)")
    undo.add_argument(
        "--expected-hash", default=None, help="the note's hash now, to restore over later changes"
    )
    undo.add_argument("--json", action="store_true", help="print the result as JSON")
    undo.set_defaults(command=cmd_undo)
    add_audit_command(commands)


def add_audit_command(commands: Any) -> None:
    audit = add_command(
        commands,
        "audit",
        "list which client made each write by Weaver",
        "One line per note written by Weaver, newest first: when, which client (an OAuth\n"
        "client, the http_token, the local user, `weaver` commands, a workflow), with which tool,\n"
        "the note, the edit id (`weaver undo --edit`) and the outcome. Kept audit_retention_days.",
    )
    audit.add_argument("--client", default=None, help="a client id or name (cli, a workflow id)")
    audit.add_argument("--note", default=None, help="a note's path, or a folder ending in /")
    audit.add_argument(
        "--since", default=None, help="an age (30m, 12h, 7d, 2w) or an ISO date or time"
    )
    audit.add_argument("--limit", type=positive, default=50, help="how many (default 50)")
    audit.add_argument("--offset", type=non_negative, default=0, help="how many to skip (paging)")
    audit.add_argument("--json", action="store_true", help="print the page as JSON")
    audit.set_defaults(command=cmd_audit)


def cmd_edits(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.edits import history

    with fresh_app(settings, reconcile=False) as (app, _):
        found = history.list_edits(app, args.path, limit=max(1, args.limit), offset=0)
    if args.json:
        print(json.dumps(asdict(found)))
        return 0
    if not found.edits:
        print(f"{found.path}: no edits by Weaver kept")
        return 0
    print(f"{found.path}: {found.total} edit(s) by Weaver, newest first")
    for edit in found.edits:
        marks = [m for m, on in (("current", edit.current), ("gone", not edit.restorable)) if on]
        tail = f"  ({', '.join(marks)})" if marks else ""
        print(f"  {edit.edit_id:>6}  {edit.at}  {edit.operation}{tail}")
    if found.total > len(found.edits):
        print(f"  ... {found.total - len(found.edits)} more (--limit)")
    return 0


def cmd_undo(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.edits import history
    from weaver.edits.interrupted import recover_edits
    from weaver.edits.steps import NoteEditError
    from weaver.runtime.cache_sync import sync_cache

    with fresh_app(settings, reconcile=False) as (app, holds):

        def sync(expected: Mapping[str, str | None]) -> bool:
            return sync_cache(app, expected, holds_writer=holds)

        if holds:  # else the daemon or server holding the cache finished them at its start
            recover_edits(app, sync)
        edit_id = args.edit
        if edit_id is None:
            latest = history.list_edits(app, args.path, limit=1, offset=0).edits
            if not latest:
                raise NoteEditError(f"{args.path!r} has no edit by Weaver to undo")
            edit_id = latest[0].edit_id
        change = history.restore_edit(
            app, args.path, edit_id, expected_hash=args.expected_hash, sync=sync
        )
    if args.json:
        print(
            json.dumps(
                {
                    "path": change.path,
                    "edit": edit_id,
                    "contentHash": change.content_hash,
                    "trashPath": change.trash_path,
                    "changed": change.changed,
                }
            )
        )
        return 0
    where = f" (it went to {change.trash_path})" if change.trash_path else ""
    print(f"{change.path}: edit {edit_id} undone{where}")
    return 0


def cmd_audit(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cli.console import clip, format_table
    from weaver.edits.audit import read_audit
    from weaver.runtime.app import open_app

    app = open_app(settings)
    try:
        page = read_audit(
            app.db,
            client=args.client,
            note=args.note,
            since=args.since,
            limit=min(max(1, args.limit), 1000),
            offset=max(0, args.offset),
        )
    finally:
        app.close()
    if args.json:
        items = [asdict(item) for item in page.items]
        print(json.dumps({"entries": items, "total": page.total, "offset": page.offset}))
        return 0
    rows = [
        (
            item.at,
            clip(_client(item.caller_kind, item.client_name, item.client_id), 32),
            item.tool,
            item.path,
            str(item.edit_id),
            item.outcome,
        )
        for item in page.items
    ]
    header = ("WHEN (UTC)", "CLIENT", "TOOL", "NOTE", "EDIT", "OUTCOME")
    print(format_table(header, rows) or "No writes recorded.")
    if page.has_more:
        shown = page.offset + len(rows)
        print(f"... {page.total - shown} more (--offset {shown})")
    return 0


def _client(kind: str, name: str, client_id: str) -> str:
    """`oauth: Claude (4f1c...)`: the kind, the name, and the id when the name is not it."""
    if name == client_id:
        return f"{kind}: {name}" if kind != name else kind
    return f"{kind}: {name} ({client_id[:8]})"
