"""`weaver tasks`: the task query behind the `query_tasks` tool, from a shell."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from weaver.cli.counts import non_negative, positive
from weaver.cli.exits import EXIT_USAGE, add_command

if TYPE_CHECKING:  # imported when the command runs, not to build the parser
    from weaver.cache.task_queries import TaskPage
    from weaver.config import Settings
    from weaver.tasks.filters import TaskFilters


def add_task_command(commands: Any) -> None:
    tasks = add_command(
        commands,
        "tasks",
        "list the vault's tasks (checkbox items) as the Tasks plugin queries them",
        "The query behind the `query_tasks` tool: filters as flags, ANDed with --query (the\n"
        "Tasks plugin's query language, one instruction per line). Date flags take the\n"
        "plugin's words: --due 'before tomorrow', --done 'this week', --start '2026-05-01'.",
    )
    tasks.add_argument("--query", help="a Tasks query, lines separated by newlines or ';'")
    tasks.add_argument("--status", help="TODO, DONE, IN_PROGRESS, ..., a checkbox char, open/done")
    for date_flag in ("due", "scheduled", "start", "done"):
        tasks.add_argument(f"--{date_flag}", help=f"the {date_flag} date, e.g. 'before tomorrow'")
    tasks.add_argument("--overdue", action="store_true", help="open and due before today")
    tasks.add_argument("--no-due-date", action="store_true", help="only tasks without due date")
    tasks.add_argument("--priority", help="e.g. high, 'above medium', 'not none'")
    tasks.add_argument("--tag", help="a tag on the task line")
    tasks.add_argument("--path", help="substring of the note's path")
    tasks.add_argument("--folder", help="substring of the note's folder")
    tasks.add_argument("--heading", help="substring of the headings above the task")
    tasks.add_argument("--text", help="substring of the description")
    tasks.add_argument("--sort", action="append", default=[], help="e.g. due, 'priority reverse'")
    tasks.add_argument("--group-by", action="append", default=[], help="e.g. folder, tags")
    tasks.add_argument("--limit", type=positive, default=50, help="tasks shown (default 50)")
    tasks.add_argument("--offset", type=non_negative, default=0, help="tasks skipped first")
    tasks.add_argument("--json", action="store_true", help="print the answer as JSON")
    tasks.set_defaults(command=cmd_tasks)


def cmd_tasks(args: argparse.Namespace, settings: Settings) -> int:
    """`weaver tasks`: the same query as the `query_tasks` tool, from a shell."""
    from datetime import date

    from weaver.cache.read import read_snapshot
    from weaver.cache.task_queries import run_task_query
    from weaver.cli.tag_commands import fresh_app
    from weaver.errors import TaskQueryError
    from weaver.tasks.filters import build_task_query

    today = date.today()
    query_text = args.query.replace(";", "\n") if args.query else None
    try:
        query = build_task_query(_filters(args), query_text, today)
    except TaskQueryError as exc:
        print(f"weaver: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with fresh_app(settings) as (app, _holds), read_snapshot(app.db) as conn:
        found = run_task_query(
            conn, query, today, max(0, args.offset), max(1, min(args.limit, 500))
        )
    _print(found, args.json)
    return 0


def _filters(args: argparse.Namespace) -> TaskFilters:
    from weaver.tasks.filters import TaskFilters

    return TaskFilters(
        status=args.status,
        due=args.due,
        scheduled=args.scheduled,
        start=args.start,
        done=args.done,
        overdue=args.overdue,
        no_due_date=args.no_due_date,
        priority=args.priority,
        tag=args.tag,
        path=args.path,
        folder=args.folder,
        heading=args.heading,
        text=args.text,
        sort=args.sort,
        group_by=args.group_by,
    )


def _print(found: TaskPage, as_json: bool) -> None:
    from dataclasses import asdict

    from weaver.cli.console import format_table

    page = found.page
    if as_json:
        answer = {
            "tasks": [asdict(t) for t in page.items],
            "total": page.total,
            "offset": page.offset,
            "hasMore": page.has_more,
            "groups": [{"names": list(g.names), "count": g.count} for g in found.groups],
        }
        print(json.dumps(answer))
        return
    rows = [
        (
            f"[{t.status_char}]",
            " ".join(f"{k} {v}" for k, v in t.dates.items()),
            t.priority if t.priority != "none" else "",
            f"{t.path}:{t.line}",
            t.description,
        )
        for t in page.items
    ]
    header = ("status", "dates", "priority", "where", "task")
    print(format_table(header, rows) if rows else "no tasks found")
    shown = f"{page.offset + 1}-{page.offset + len(page.items)}" if page.items else "none"
    print(f"{page.total} tasks ({shown} shown)" + (", more with --offset" if page.has_more else ""))
    for group in found.groups:
        print(f"  {' / '.join(group.names)}: {group.count}")
