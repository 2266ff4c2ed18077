"""`weaver tags list` and `weaver tags rename OLD NEW [--dry-run]`: the tag commands, kept
apart from `weaver.cli` (which registers them) as a thin edge over `weaver.edits.tags`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from weaver.cli.exits import add_command

if TYPE_CHECKING:  # imported when a command runs, not to build the parser
    from weaver.config import Settings
    from weaver.runtime.app import App


def add_tag_commands(commands: Any) -> None:
    """`weaver tags ...`, registered on `weaver.cli.build_parser`'s subparsers."""
    tags_parser = add_command(
        commands,
        "tags",
        "list or rename the vault's tags",
        "`weaver tags list` counts every tag; `weaver tags rename OLD NEW` renames a tag, and\n"
        "the tags nested below it, in the frontmatter and the text of every note, the way\n"
        "Obsidian's Tag Wrangler does. A note edited while the rename runs is skipped and named.",
    )
    sub = tags_parser.add_subparsers(
        title="tag commands", required=True, metavar="ACTION", help="list or rename"
    )
    listing = add_command(
        sub,
        "list",
        "every tag with the notes that carry it",
        "One line per tag: how many notes carry it, counting those that carry a tag nested\n"
        "below it, and how many carry it themselves.",
    )
    listing.add_argument("--json", action="store_true", help="print the list as JSON")
    listing.set_defaults(command=cmd_tags_list)
    rename = add_command(
        sub,
        "rename",
        "rename a tag (and the tags nested below it) in every note",
        "Matches as Obsidian does (any case; never inside code, comments or URLs) and writes\n"
        "the new name as given. An interrupted rename is finished by the next run.",
    )
    rename.add_argument("old", help="the tag to rename ('#' optional, any case)")
    rename.add_argument("new", help="its new name, spelled as it should be written")
    rename.add_argument(
        "--dry-run", action="store_true", help="print every line that would change; write nothing"
    )
    rename.add_argument("--json", action="store_true", help="print the result as JSON")
    rename.set_defaults(command=cmd_tags_rename)


def cmd_tags_list(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.edits import tags

    with fresh_app(settings) as (app, _):
        found = tags.list_tags(app)
    if args.json:
        print(json.dumps([asdict(t) for t in found]))
        return 0
    width = max((len(t.tag) for t in found), default=3)
    print(f"{'tag'.ljust(width)}  notes  own")
    for t in found:
        print(f"#{t.tag.ljust(width - 1)}  {t.notes:>5}  {t.own:>3}")
    return 0


def cmd_tags_rename(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.edits import tags
    from weaver.edits.interrupted import recover_edits
    from weaver.runtime.cache_sync import sync_cache

    with fresh_app(settings) as (app, holds):

        def sync(expected: Mapping[str, str | None]) -> bool:
            return sync_cache(app, expected, holds_writer=holds)

        if holds:  # else the daemon or server holding the cache finished them at its start
            recover_edits(app, sync)
        result = tags.rename_tag(app, args.old, args.new, dry_run=args.dry_run, sync=sync)
    if args.json:
        print(json.dumps(asdict(result)))
        return 0
    for change in result.changes:
        print(f"{change.path}:{change.line}: {change.before.strip()}  ->  {change.after.strip()}")
    planned = len({c.path for c in result.changes})
    if result.dry_run:
        print(f"dry run: #{result.old} -> #{result.new} would change {planned} notes")
        return 0
    written = sum(o.status == tags.WRITTEN for o in result.outcomes)
    print(f"#{result.old} -> #{result.new}: {written} notes written")
    for outcome in result.outcomes:
        if outcome.status != tags.WRITTEN:
            print(f"  {outcome.status}: {outcome.path} ({outcome.detail})")
    return 0 if all(o.status == tags.WRITTEN for o in result.outcomes) else 1


@contextmanager
def fresh_app(settings: Settings, *, reconcile: bool = True) -> Iterator[tuple[App, bool]]:
    """The app, its cache reconciled first (unless `reconcile` is off) when no daemon or server
    keeps it fresh; the flag says whether this process holds the writer lock meanwhile."""
    from weaver.runtime.app import open_app
    from weaver.runtime.locks import writer_lock_for

    lock = writer_lock_for(settings)
    holds = lock.try_acquire()
    app = open_app(settings)
    try:
        if holds and reconcile:
            app.indexer.reconcile()
        yield app, holds
    finally:
        app.close()
        lock.close()
