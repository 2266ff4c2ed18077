"""`weaver edits PATH` and `weaver undo PATH [--edit ID]`: a note's edits by Weaver and undoing
one, kept apart from `weaver.cli` (which registers them) as a thin edge over
`weaver.edits.history`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

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
    listing.add_argument("--limit", type=int, default=20, help="how many (default 20)")
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
