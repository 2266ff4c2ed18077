"""The `weaver` command line: a thin edge over the core; errors become one line and an exit code.

Exit codes: 0 success, 1 a runtime failure, 2 bad usage or configuration (argparse's own code).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import structlog
from pydantic import ValidationError

from weaver import __version__
from weaver.cache.executions import EXECUTION_STATUSES
from weaver.config import Settings, load_settings
from weaver.engine.analysis import parse_moment
from weaver.errors import ConfigError, DaemonError, WeaverError
from weaver.host.app import open_app
from weaver.log import configure_logging

if TYPE_CHECKING:
    from weaver.engine import WorkflowEngine

Command = Callable[[argparse.Namespace, Settings], int]
EXIT_FAILURE = 1
EXIT_USAGE = 2
# Characters of a record's data shown in `weaver records`' table.
RECORD_WIDTH = 80


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = load_settings(
            config_path=args.config,
            overrides={"vault": args.vault, "database_url": args.db, "log_level": args.log_level},
        )
        configure_logging(settings.log_level, settings.log_format)
        command: Command = args.command
        return command(args, settings)
    except (ConfigError, DaemonError) as exc:
        print(f"weaver: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WeaverError as exc:
        # Imported here: the engine's package is not needed to start most commands.
        from weaver.engine.errors import WorkflowRequestError

        message = str(exc).partition("\n")[0]
        if exc.__cause__ is not None and _is_corruption(exc.__cause__):
            message += "; `weaver index` moves the corrupt cache aside and rebuilds it"
        print(f"weaver: {message}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, WorkflowRequestError) else EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # no traceback on any path: one line, the details in the log
        print(f"weaver: {describe_failure(exc)}", file=sys.stderr)
        logging.getLogger("weaver").debug("command failed", exc_info=exc)
        return EXIT_FAILURE


def _is_corruption(exc: BaseException) -> bool:
    from weaver.cache.recovery import is_corruption

    return is_corruption(exc)


def describe_failure(exc: BaseException) -> str:
    """One line for an error no command expected."""
    from sqlalchemy.exc import SQLAlchemyError

    from weaver.cache.recovery import is_corruption

    first = str(getattr(exc, "orig", None) or exc).partition("\n")[0]
    if is_corruption(exc):
        return f"the cache is corrupt ({first}); `weaver index` moves it aside and rebuilds it"
    if isinstance(exc, SQLAlchemyError):
        return f"cache error: {first}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or type(exc).__name__}: {exc.filename or first}"
    return f"unexpected error: {type(exc).__name__}: {first}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="weaver", description=__doc__)
    parser.add_argument("--version", action="version", version=f"weaver {__version__}")
    _add_common_options(parser, default=None)
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    index = commands.add_parser("index", help="bring the cache up to date with the vault")
    index.add_argument("--full", action="store_true", help="re-read every note")
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    index.set_defaults(command=cmd_index)

    daemon = commands.add_parser(
        "daemon", help="watch the vault, run workflows and schedules, serve MCP over HTTP"
    )
    daemon.add_argument(
        "--no-http", action="store_true", help="do not serve MCP over HTTP (the rest still runs)"
    )
    daemon.set_defaults(command=cmd_daemon)

    serve = commands.add_parser("serve", help="serve the vault to MCP clients (stdio or HTTP)")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--host", help="HTTP address to bind (default: http_host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default: http_port, 8765)")
    serve.add_argument(
        "--no-watch", action="store_true", help="do not keep the cache fresh while serving"
    )
    serve.set_defaults(command=cmd_serve)

    add_workflow_commands(commands)
    # `weaver index --vault DIR` works as `weaver --vault DIR index` does: after the command,
    # an option overrides; left out there, it keeps what was given before (or None).
    for command in commands.choices.values():
        _add_common_options(command, default=argparse.SUPPRESS)
    return parser


def _add_common_options(parser: argparse.ArgumentParser, default: object) -> None:
    group = parser.add_argument_group("common options (before or after the command)")
    group.add_argument(
        "--config", type=Path, default=default, help="TOML config file (default: WEAVER_CONFIG)"
    )
    group.add_argument(
        "--vault", type=Path, default=default, help="the vault folder (overrides config)"
    )
    group.add_argument(
        "--db", default=default, help="cache database URL (default: <vault>/.weaver/cache.db)"
    )
    group.add_argument(
        "--log-level", default=default, choices=["debug", "info", "warning", "error"]
    )


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.locks import WriterLock

    with WriterLock.for_settings(settings) as lock:
        if not lock.try_acquire():
            raise DaemonError(
                f"process {lock.holder()} (a weaver daemon or serve) is keeping this cache "
                "fresh; stop it to index by hand"
            )
        app = open_app(settings, check=True)
        try:
            tty = sys.stdout.isatty() and not args.json
            progress = _progress_bar(sys.stdout) if tty else None
            report = app.indexer.reconcile(full=args.full, progress=progress)
        finally:
            app.close()
    summary = report.summary()
    if args.json:
        print(json.dumps(summary))
    else:
        print(_format_summary(settings.vault, summary))
    return 0


def cmd_daemon(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.daemon import run_daemon

    run_daemon(settings, http=not args.no_http)
    return 0


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.mcp_server.serve import run_serve

    overrides = {"http_host": args.host, "http_port": args.port}
    updates = {key: value for key, value in overrides.items() if value is not None}
    if updates:
        try:
            settings = Settings.model_validate({**settings.model_dump(), **updates})
        except ValidationError as exc:
            raise ConfigError(f"invalid --host/--port: {exc.errors()[0]['msg']}") from exc
    run_serve(settings, transport=args.transport, watch=not args.no_watch)
    return 0


def _format_summary(vault: Path, summary: dict[str, Any]) -> str:
    counts = ", ".join(f"{summary[k]} {k}" for k in ("added", "updated", "removed", "moved"))
    return (
        f"Indexed {vault}: {counts}, {summary['unchanged']} unchanged, "
        f"{summary['errors']} with errors, {summary['relinked']} links re-resolved "
        f"in {summary['seconds']:.2f}s"
    )


def _progress_bar(stream: TextIO) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} notes")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show


# -- workflows: trigger, workflows, history, status (thin edges over WorkflowEngine) -----------


def add_workflow_commands(commands: Any) -> None:
    """The workflow subcommands, registered on `build_parser`'s subparsers."""
    trigger = commands.add_parser("trigger", help="run a workflow now (or queue it with --async)")
    trigger.add_argument("workflow", help="the workflow id (see `weaver workflows`)")
    trigger.add_argument("--input", help="the workflow's input, a JSON object")
    trigger.add_argument(
        "--async",
        dest="async_",
        action="store_true",
        help="queue it for the running daemon and return at once",
    )
    trigger.add_argument("--json", action="store_true", help="print trigger_workflow's data")
    trigger.set_defaults(command=cmd_trigger)

    workflows = commands.add_parser("workflows", help="list the workflows and broken plugins")
    workflows.add_argument("--json", action="store_true", help="print list_workflows' data")
    workflows.set_defaults(command=cmd_workflows)

    history = commands.add_parser("history", help="past and queued workflow executions")
    history.add_argument("--workflow", help="only this workflow's executions")
    history.add_argument(
        "--status", choices=EXECUTION_STATUSES, help="only executions in this state"
    )
    history.add_argument("--limit", type=int, default=20, help="rows to show, 1-100 (20)")
    history.add_argument("--offset", type=int, default=0, help="rows to skip, for paging")
    history.add_argument("--json", action="store_true", help="print get_workflow_history's data")
    history.set_defaults(command=cmd_history)

    records = commands.add_parser("records", help="what a workflow recorded, newest first")
    records.add_argument("workflow", help="the workflow id (see `weaver workflows`)")
    records.add_argument("--key", help="only records about this (usually a note path)")
    records.add_argument("--kind", help="only records of this kind (change, analysis, ...)")
    records.add_argument(
        "--since", type=parse_time, help="recorded at or after: YYYY-MM-DD[THH:MM] or epoch ms"
    )
    records.add_argument("--until", type=parse_time, help="recorded before (same forms)")
    records.add_argument("--limit", type=int, default=20, help="records to show, 1-500 (20)")
    records.add_argument("--offset", type=int, default=0, help="records to skip, for paging")
    records.add_argument("--json", action="store_true", help="print get_workflow_records' data")
    records.set_defaults(command=cmd_records)

    status = commands.add_parser("status", help="one workflow execution in detail")
    status.add_argument("execution_id", help="an execution id (from trigger or history)")
    status.add_argument("--json", action="store_true", help="print get_workflow_status's data")
    status.set_defaults(command=cmd_status)


@contextmanager
def _workflow_engine(
    settings: Settings, fresh_cache: bool = False, plugins: bool = True
) -> Iterator[WorkflowEngine]:
    """An engine for one command: sync runs here, async runs are left queued for the daemon.

    With `fresh_cache`, the cache is reconciled first unless a daemon or server holds the
    writer lock (and so keeps it fresh already). Without `plugins`, none are imported (the
    history needs only the executions table).
    """
    from weaver.engine import Registry, WorkflowEngine, load_registry
    from weaver.host.locks import WriterLock

    app = open_app(settings)
    try:
        if fresh_cache:
            with WriterLock.for_settings(settings) as lock:
                if lock.try_acquire():
                    app.indexer.reconcile()
        registry = load_registry(settings) if plugins else Registry()
        engine = WorkflowEngine.for_app(app, registry, background="queue")
        engine.start(subscribe=False)
        try:
            yield engine
        finally:
            engine.stop()
    finally:
        app.close()


def cmd_trigger(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.engine import WorkflowRequestError
    from weaver.host.locks import daemon_running

    try:
        data = json.loads(args.input) if args.input is not None else None
    except json.JSONDecodeError as exc:
        print(f"weaver: --input is not valid JSON: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with _workflow_engine(settings, fresh_cache=not args.async_) as engine:
        try:
            engine.get_runnable(args.workflow).validate_input(data)
            if args.async_ and not daemon_running(settings.vault):
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
    if args.json:
        print(json.dumps(result.to_wire()))
    elif result.mode == "async":
        print(f"{result.message}: {result.execution_id} (weaver status {result.execution_id})")
    else:
        print(
            f"{result.execution_id} {result.status} in {result.duration or 0} ms: {result.message}"
        )
        if result.result is not None:
            print(json.dumps(result.result, indent=2, ensure_ascii=False))
    return 0 if result.mode == "async" or result.status == "completed" else EXIT_FAILURE


def cmd_workflows(args: argparse.Namespace, settings: Settings) -> int:
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
            _when(w.last_executed),
        )
        for w in listing.workflows
    ]
    print(_table(("ID", "ENABLED", "TRIGGERS", "RUNS", "LAST RUN"), rows) or "No workflows.")
    for error in listing.errors:
        print(f"failed to load: {error.source}: {error.error}")
    return 0


def cmd_history(args: argparse.Namespace, settings: Settings) -> int:
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
            _when(e.start_time),
            "" if e.duration is None else f"{e.duration} ms",
            e.error or "",
        )
        for e in page.executions
    ]
    header = ("EXECUTION", "WORKFLOW", "STATUS", "TRIGGER", "STARTED", "DURATION", "ERROR")
    print(_table(header, rows) or "No executions.")
    if page.has_more:
        print(
            f"... {page.total - page.offset - len(rows)} more (--offset {page.offset + len(rows)})"
        )
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.engine import WorkflowRequestError

    with _workflow_engine(settings, plugins=False) as engine:
        try:
            status = engine.get_status(args.execution_id)
        except WorkflowRequestError as exc:
            print(f"weaver: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.json:
        print(json.dumps(status.to_wire()))
        return 0
    lines = {
        "execution": status.execution_id,
        "workflow": f"{status.workflow_id} ({status.workflow_name})",
        "status": f"{status.status}, {status.progress}%, attempt {status.attempt}",
        "trigger": f"{status.trigger.kind} {json.dumps(status.trigger.detail)}",
        "input": json.dumps(status.input),
        "created": _when(status.created_time),
        "started": _when(status.start_time),
        "ended": _when(status.end_time),
        "duration": "" if status.duration is None else f"{status.duration} ms",
        "process": status.process or "",
        "message": status.message or "",
        "result": "" if status.result is None else json.dumps(status.result, ensure_ascii=False),
        "error": status.error or "",
    }
    for key, value in lines.items():
        if value:
            print(f"{key + ':':<10} {value}")
    if status.traceback:
        print(status.traceback.rstrip())
    return 0


def cmd_records(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.cache.records import RecordFilter, fetch_page
    from weaver.engine import load_registry
    from weaver.engine.payloads import WorkflowRecordsData
    from weaver.engine.registry import check_known

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
        (_when(r.recorded_at), r.key, r.kind, _clip(json.dumps(r.data, ensure_ascii=False)))
        for r in page.records
    ]
    print(_table(("RECORDED", "KEY", "KIND", "DATA"), rows) or "No records.")
    if page.has_more:
        shown = page.offset + len(rows)
        print(f"... {page.total - shown} more (--offset {shown}; --json for whole records)")
    return 0


def parse_time(text: str) -> int:
    """`--since`/`--until`: Unix epoch ms, or an ISO date or date-time in local time."""
    if text.strip().isdigit():
        return int(text)
    moment = parse_moment(text)
    if moment is None:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (YYYY-MM-DD, YYYY-MM-DDTHH:MM or epoch ms)"
        )
    return moment


def _clip(text: str, width: int = RECORD_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return ""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)


def run() -> None:
    structlog.contextvars.clear_contextvars()
    sys.exit(main())


if __name__ == "__main__":
    run()
