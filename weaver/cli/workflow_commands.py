"""trigger, workflows, history, records, status: thin edges over the WorkflowEngine."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from weaver.cli.counts import non_negative, page_size
from weaver.cli.exits import EXIT_FAILURE, EXIT_USAGE, add_command

# The engine's and the records' page bounds (HISTORY_MAX_LIMIT, PAGE_MAX_LIMIT), repeated so
# that building the parser imports neither (`weaver --help` stays fast); a test ties them.
HISTORY_PAGE_MOST = 100
RECORDS_PAGE_MOST = 500

if TYPE_CHECKING:  # imported when a command runs, not to build the parser
    from weaver.config import Settings
    from weaver.engine import WorkflowEngine


def add_workflow_commands(commands: Any) -> None:
    """The workflow subcommands, registered on `build_parser`'s subparsers."""
    trigger = add_command(
        commands,
        "trigger",
        "run a workflow now (or queue it for the daemon with --async)",
        "Brings the index up to date, runs the workflow here and prints how it ended, a\n"
        "brief of its result and where its output went. Exits 1 when the run failed.",
    )
    trigger.add_argument("workflow", help="the workflow's id (see `weaver workflows`)")
    trigger.add_argument(
        "--input", metavar="JSON", help="the workflow's input, a JSON object (default: {})"
    )
    trigger.add_argument(
        "--async",
        dest="async_",
        action="store_true",
        help="queue it for the running `weaver daemon` and return at once",
    )
    trigger.add_argument(
        "--json", action="store_true", help="print the whole result as JSON (trigger_workflow's)"
    )
    trigger.set_defaults(command=cmd_trigger)

    workflows = add_command(
        commands,
        "workflows",
        "list the workflows, and the plugins that failed to load",
        "Every workflow Weaver found (built in, in workflow_dirs, or installed as a plugin),\n"
        "whether it is enabled, what starts it, and how often it ran.",
    )
    workflows.add_argument(
        "--json", action="store_true", help="print the list as JSON (list_workflows' data)"
    )
    workflows.set_defaults(command=cmd_workflows)

    history = add_command(
        commands,
        "history",
        "list past and queued workflow runs, newest first",
        "One line per run (an execution): its id for `weaver status`, how it was started,\n"
        "when, how long it took and why it failed.",
    )
    history.add_argument("--workflow", metavar="ID", help="only this workflow's runs")
    status_option = history.add_argument("--status", help="only runs in this state")
    # Given after add_argument, which reads choices (to check a metavar) as soon as it has any.
    status_option.choices = ExecutionStatuses()
    history.add_argument(
        "--limit",
        type=page_size(HISTORY_PAGE_MOST),
        default=20,
        help=f"runs to show, 1-{HISTORY_PAGE_MOST} (default: 20)",
    )
    history.add_argument(
        "--offset", type=non_negative, default=0, help="runs to skip, for the next page"
    )
    history.add_argument(
        "--json", action="store_true", help="print the page as JSON (get_workflow_history's)"
    )
    history.set_defaults(command=cmd_history)

    records = add_command(
        commands,
        "records",
        "show what a workflow recorded, newest first",
        "Workflows keep records about notes (an analysis, a change log, a concept's\n"
        "versions). The table shows the start of each; --json shows them whole.",
    )
    records.add_argument("workflow", help="the workflow's id (see `weaver workflows`)")
    records.add_argument("--key", help="only records about this (usually a note's path)")
    records.add_argument("--kind", help="only records of this kind (change, analysis, ...)")
    records.add_argument(
        "--since",
        type=parse_time,
        metavar="TIME",
        help="recorded at or after TIME: YYYY-MM-DD, YYYY-MM-DDTHH:MM (local) or epoch ms",
    )
    records.add_argument(
        "--until", type=parse_time, metavar="TIME", help="recorded before TIME (same forms)"
    )
    records.add_argument(
        "--limit",
        type=page_size(RECORDS_PAGE_MOST),
        default=20,
        help=f"records to show, 1-{RECORDS_PAGE_MOST} (default: 20)",
    )
    records.add_argument(
        "--offset", type=non_negative, default=0, help="records to skip, for paging"
    )
    records.add_argument(
        "--json", action="store_true", help="print the page as JSON (get_workflow_records')"
    )
    records.set_defaults(command=cmd_records)

    status = add_command(
        commands,
        "status",
        "show one workflow run in detail",
        "Its state, input, times, result or error (with the traceback of a failure).",
    )
    status.add_argument("execution_id", help="the run's id, from `weaver trigger` or `history`")
    status.add_argument(
        "--json", action="store_true", help="print it as JSON (get_workflow_status' data)"
    )
    status.set_defaults(command=cmd_status)


class ExecutionStatuses(Collection[str]):
    """`history --status`'s choices, the cache's statuses: read only when argparse asks (the
    option given, or the command's help shown), since the cache's module imports SQLAlchemy."""

    def _statuses(self) -> tuple[str, ...]:
        from weaver.cache.executions import EXECUTION_STATUSES

        return EXECUTION_STATUSES

    def __contains__(self, value: object) -> bool:
        return value in self._statuses()

    def __iter__(self) -> Iterator[str]:
        return iter(self._statuses())

    def __len__(self) -> int:
        return len(self._statuses())


@contextmanager
def _workflow_engine(
    settings: Settings, fresh_cache: bool = False, plugins: bool = True
) -> Iterator[WorkflowEngine]:
    """An engine for one command: sync runs here, async runs are left queued for the daemon.

    With `fresh_cache`, the cache is reconciled first unless a daemon or server holds the
    writer lock (and so keeps it fresh already). Without `plugins`, none are imported (the
    history needs only the executions table).
    """
    from weaver.engine import Registry, load_registry
    from weaver.runtime.app import open_app
    from weaver.runtime.engines import background_for, engine_for
    from weaver.runtime.locks import writer_lock_for

    app = open_app(settings)
    try:
        if fresh_cache:
            lock = writer_lock_for(settings)
            try:
                if lock.try_acquire():
                    app.indexer.reconcile()
            finally:
                lock.close()
        registry = load_registry(settings) if plugins else Registry()
        engine = engine_for(app, registry, background=background_for(settings, "queue"))
        engine.start(subscribe=False)
        try:
            yield engine
        finally:
            engine.stop()
    finally:
        app.close()


def cmd_trigger(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cache.executions import get_outputs
    from weaver.cli.console import format_trigger
    from weaver.engine import WorkflowRequestError
    from weaver.json_nesting import load_json
    from weaver.runtime.locks import daemon_running

    try:
        data = load_json(args.input) if args.input is not None else None
    except ValueError as exc:  # not JSON, or nested too deep to parse
        print(f"weaver: --input is not valid JSON: {exc}", file=sys.stderr)
        return EXIT_USAGE
    outputs = None
    with _workflow_engine(settings, fresh_cache=not args.async_) as engine:
        try:
            engine.get_runnable(args.workflow).validate_input(data)
            if args.async_ and engine.background != "jobs" and not daemon_running(settings.vault):
                print(
                    f"weaver: no daemon is running on {settings.vault}, so nothing would run "
                    "the queued workflow: start `weaver daemon`, or trigger without --async",
                    file=sys.stderr,
                )
                return EXIT_FAILURE
            result = engine.trigger(args.workflow, data, async_=args.async_, via="cli")
        except WorkflowRequestError as exc:
            print(f"weaver: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if result.mode == "sync" and not args.json:
            created = engine.get_status(result.execution_id).created_time
            with engine.db.connect() as conn:
                outputs = get_outputs(conn, result.execution_id, result.workflow_id, created)
    if args.json:
        print(json.dumps(result.to_wire()))
    else:
        print(format_trigger(result, outputs))
    return 0 if result.mode == "async" or result.status == "completed" else EXIT_FAILURE


def cmd_workflows(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cli.console import format_table, when

    with _workflow_engine(settings) as engine:
        listing = engine.list_workflows()
    if args.json:
        print(json.dumps(listing.to_wire()))
        return 0
    rows = [
        (
            w.id,
            "yes" if w.enabled else "no",
            ", ".join(w.triggers),
            str(w.execution_count),
            when(w.last_executed),
        )
        for w in listing.workflows
    ]
    header = ("ID", "ENABLED", "TRIGGERS", "RUNS", "LAST RUN")
    print(format_table(header, rows) or "No workflows.")
    for error in listing.errors:
        print(f"failed to load: {error.source}: {error.error}")
    return 0


def cmd_history(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cli.console import format_table, when

    # The plugins only to tell a misspelt --workflow from one that never ran.
    with _workflow_engine(settings, plugins=args.workflow is not None) as engine:
        page = engine.get_history(args.workflow, args.limit, args.offset, args.status)
    if args.json:
        print(json.dumps(page.to_wire()))
        return 0
    rows = [
        (
            e.execution_id,
            e.workflow_id,
            e.status,
            e.trigger,
            when(e.start_time),
            "" if e.duration is None else f"{e.duration} ms",
            e.error or "",
        )
        for e in page.executions
    ]
    header = ("EXECUTION", "WORKFLOW", "STATUS", "TRIGGER", "STARTED", "DURATION", "ERROR")
    print(format_table(header, rows) or "No executions.")
    if page.has_more:
        print(
            f"... {page.total - page.offset - len(rows)} more (--offset {page.offset + len(rows)})"
        )
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cli.console import format_status
    from weaver.engine import WorkflowRequestError

    with _workflow_engine(settings, plugins=False) as engine:
        try:
            status = engine.get_status(args.execution_id)
        except WorkflowRequestError as exc:
            print(f"weaver: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.json:
        print(json.dumps(status.to_wire()))
    else:
        print(format_status(status))
    return 0


def cmd_records(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cache.records import RecordFilter, fetch_page
    from weaver.cli.console import clip, format_table, when
    from weaver.engine import load_registry
    from weaver.engine.payloads import WorkflowRecordsData
    from weaver.engine.registry import check_known
    from weaver.runtime.app import open_app

    where = RecordFilter(args.workflow, args.key, args.kind, args.since, args.until)
    app = open_app(settings)
    try:
        found = fetch_page(app.db, where, args.limit, args.offset)
        if found.total == 0:  # none, or a misspelt id: the plugins tell
            check_known(load_registry(settings), app.db, args.workflow)
    finally:
        app.close()
    page = WorkflowRecordsData.of(found)
    if args.json:
        print(json.dumps(page.to_wire(), ensure_ascii=False))
        return 0
    rows = [
        (when(r.recorded_at), r.key, r.kind, clip(json.dumps(r.data, ensure_ascii=False)))
        for r in page.records
    ]
    print(format_table(("RECORDED", "KEY", "KIND", "DATA"), rows) or "No records.")
    if page.has_more:
        shown = page.offset + len(rows)
        print(f"... {page.total - shown} more (--offset {shown}; --json for whole records)")
    return 0


def parse_time(text: str) -> int:
    """`--since`/`--until`: Unix epoch ms, or an ISO date or date-time in local time."""
    from weaver.engine.analysis import parse_moment

    if text.strip().isdigit():
        return int(text)
    moment = parse_moment(text)
    if moment is None:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (YYYY-MM-DD, YYYY-MM-DDTHH:MM or epoch ms)"
        )
    return moment
