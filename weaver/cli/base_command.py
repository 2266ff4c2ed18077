"""`weaver base PATH [--view NAME]`: one view of an Obsidian Base printed as a table, what the
`query_base` tool answers."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from weaver.cli.counts import non_negative, positive
from weaver.cli.exits import EXIT_USAGE, add_command

if TYPE_CHECKING:  # imported when the command runs, not to build the parser
    from weaver.config import Settings
    from weaver.runtime.base_views import BaseRun

# A printed cell is cut to this width, so that a long property keeps the table readable.
CELL_WIDTH = 60


def add_base_command(commands: Any) -> None:
    base = add_command(
        commands,
        "base",
        "print a view of an Obsidian Base (a .base file or a note's ```base block)",
        "Evaluates the view as Obsidian shows it: the files that pass its filters, its columns\n"
        "(display names as headers), sorted, grouped and limited, then its summaries. An\n"
        "expression Weaver cannot evaluate is an error naming it and the position.",
    )
    base.add_argument("path", help="a .base file, or a note holding ```base blocks")
    base.add_argument("--view", help="the view's name (default: the first)")
    base.add_argument("--block", type=int, help="for a note: which ```base block, from 0")
    base.add_argument("--limit", type=positive, default=100, help="rows printed (default 100)")
    base.add_argument("--offset", type=non_negative, default=0, help="rows skipped first")
    base.add_argument("--json", action="store_true", help="print what query_base answers")
    base.set_defaults(command=cmd_base)


def cmd_base(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cache.read import read_snapshot
    from weaver.cli.tag_commands import fresh_app
    from weaver.errors import WeaverError
    from weaver.runtime import base_views

    try:
        with fresh_app(settings) as (app, _holds), read_snapshot(app.db) as conn:
            source = base_views.read_source(app.vault, args.path, args.block)
            run = base_views.run_source(conn, source, args.view)
    except WeaverError as exc:
        print(f"weaver: {exc}", file=sys.stderr)
        return EXIT_USAGE
    limit, offset = max(1, args.limit), max(0, args.offset)
    if args.json:
        from weaver.mcp_server.base_answers import view_answer

        print(json.dumps(view_answer(run, limit, offset), ensure_ascii=False))
    else:
        _print(run, limit, offset)
    return 0


def _print(run: BaseRun, limit: int, offset: int) -> None:
    from weaver.cli.console import format_table

    result = run.result
    header = [c.label for c in result.columns]
    starts = {g.start: g for g in result.groups or ()}
    end = min(len(result.rows), offset + limit)
    print(f"{run.source.label}: view {result.view.name!r} ({result.view.type})")
    table: list[list[str]] = []
    for index in range(offset, end):
        if index in starts:
            if table:
                print(format_table(header, table))
                table = []
            group = starts[index]
            print(f"\n== {_text(group.key)} ({group.count})")
        table.append([_text(value) for value in result.rows[index].cells])
    if table:
        print(format_table(header, table))
    _print_footer(run, offset, end)


def _print_footer(run: BaseRun, offset: int, end: int) -> None:
    result = run.result
    for key, value in result.summaries.items():
        label = next((c.label for c in result.columns if c.key == key), key)
        print(f"{label}: {_text(value)}")
    shown = f"{offset + 1}-{end}" if end > offset else "none"
    more = ", more with --offset" if end < len(result.rows) else ""
    print(f"{len(result.rows)} rows ({shown} shown){more}")


def _text(value: object) -> str:
    from weaver.bases.view import plain

    shown = plain(value)  # type: ignore[arg-type]
    if shown is None:
        text = ""
    elif isinstance(shown, str):
        text = shown
    else:
        text = json.dumps(shown, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"
