"""The `weaver` command line: a thin edge over the core; errors become one line and an exit code.

Exit codes: 0 success, 1 a runtime failure, 2 bad usage or configuration (argparse's own code).
What a command prints for a person is rendered by `weaver.console`; `--json` prints the core's
data as it is.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import ValidationError
from rich.console import Console

from weaver import __version__
from weaver.cache.executions import EXECUTION_STATUSES
from weaver.cli_edits import add_edit_commands
from weaver.cli_tags import add_tag_commands
from weaver.config import Settings, expected, find_config_file, load_settings, shown
from weaver.console import (
    IndexDisplay,
    add_command,
    clip,
    format_index_summary,
    format_kept_cache,
    format_status,
    format_table,
    format_trigger,
    log_stream,
    when,
)
from weaver.engine.analysis import parse_moment
from weaver.errors import CacheError, ConfigError, DaemonError, WeaverError
from weaver.host.app import App, open_app
from weaver.json_nesting import load_json
from weaver.log import configure_logging

if TYPE_CHECKING:
    from weaver.engine import WorkflowEngine

Command = Callable[[argparse.Namespace, Settings], int]
EXIT_FAILURE = 1
EXIT_USAGE = 2

DESCRIPTION = """\
Weaver keeps a searchable index of a folder of markdown notes (an Obsidian vault), serves it
to AI assistants over MCP, and runs workflows when notes change, on a schedule or by hand.

Start with `weaver --vault PATH index`, then `weaver mcp-config` to connect an assistant.
"""

EPILOG = """\
the vault: --vault PATH, else WEAVER_VAULT, else `vault` in the config file (--config FILE,
WEAVER_CONFIG, or ./config/weaver.toml). Any setting can be given as WEAVER_<NAME>.

examples:
  weaver --vault ~/notes index            index the vault (again: only what changed)
  weaver --vault ~/notes mcp-config       the entry for Claude Desktop (--client for others)
  weaver --vault ~/notes daemon           keep it fresh and run workflows in the background
  weaver workflows                        the workflows, and how often they ran
  weaver trigger markdown-analyzer --input '{"path": "Welcome.md"}'

`weaver COMMAND --help` tells more about each command.
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = load_settings(
            config_path=args.config,
            overrides={"vault": args.vault, "database_url": args.db, "log_level": args.log_level},
            vault_here=not (getattr(args, "no_vault", False) or args.command is cmd_worker),
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
    parser = argparse.ArgumentParser(
        prog="weaver",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"weaver {__version__}", help="print the version"
    )
    _add_common_options(parser, default=None)
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")
    add_index_commands(commands)
    add_workflow_commands(commands)
    add_tag_commands(commands)  # weaver.cli_tags
    add_edit_commands(commands)  # weaver.cli_edits
    add_search_command(commands)
    # `weaver index --vault DIR` works as `weaver --vault DIR index` does: after the command,
    # an option overrides; left out there, it keeps what was given before (or None).
    for command in commands.choices.values():
        _add_common_options(command, default=argparse.SUPPRESS)
    return parser


def _add_common_options(parser: argparse.ArgumentParser, default: object) -> None:
    group = parser.add_argument_group("common options (before or after the command)")
    group.add_argument(
        "--config",
        type=Path,
        default=default,
        metavar="FILE",
        help="TOML settings file (default: WEAVER_CONFIG, else ./config/weaver.toml if present)",
    )
    group.add_argument(
        "--vault",
        type=Path,
        default=default,
        metavar="PATH",
        help="the folder of notes to use (wins over WEAVER_VAULT and the config file)",
    )
    group.add_argument(
        "--db",
        default=default,
        metavar="URL",
        help="where the index is kept, as a database URL (default: .weaver/cache.db in the vault)",
    )
    group.add_argument(
        "--log-level",
        default=default,
        choices=["debug", "info", "warning", "error"],
        help="how much to log on stderr (default: info)",
    )


def add_index_commands(commands: Any) -> None:
    """index, daemon, serve, mcp-config: the vault's index and how clients reach it."""
    index = add_command(
        commands,
        "index",
        "bring the index up to date with the vault",
        "Reads the notes that changed since the last run (all of them the first time) and\n"
        "prints what changed. On a terminal it shows progress, and a warning for each note\n"
        "it could not parse. While `weaver daemon` or `weaver serve` keeps the index fresh,\n"
        "it says so and leaves the index to them.",
    )
    index.add_argument(
        "--full", action="store_true", help="re-read every note, changed or not (slower)"
    )
    index.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    index.set_defaults(command=cmd_index)

    daemon = add_command(
        commands,
        "daemon",
        "keep the index fresh, run workflows and schedules, serve MCP over HTTP",
        "Runs until stopped (Ctrl-C or SIGTERM): watches the vault, runs the workflows its\n"
        "changes and schedules start, and serves MCP clients at http://HOST:PORT/mcp (see\n"
        "http_host and http_port in the config). One daemon per vault.",
    )
    daemon.add_argument(
        "--no-http", action="store_true", help="do not serve MCP over HTTP (the rest still runs)"
    )
    daemon.add_argument(
        "--standby",
        action="store_true",
        help="on PostgreSQL: wait for the running writer to stop, then take over (default: "
        "refuse to start beside it)",
    )
    _add_processes_option(daemon)
    daemon.set_defaults(command=cmd_daemon)

    serve = add_command(
        commands,
        "serve",
        "serve the vault to an MCP client (an AI assistant)",
        "A client such as Claude Desktop starts this itself over stdio: see `weaver\n"
        "mcp-config` for its entry. With --transport http it serves many clients at\n"
        "http://HOST:PORT/mcp instead.",
    )
    serve.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio: one client that started this process (default); http: a local web server",
    )
    serve.add_argument(
        "--host", help="with http: the address to listen on (default: http_host, 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=int, help="with http: the port to listen on (default: http_port, 8765)"
    )
    serve.add_argument(
        "--no-watch", action="store_true", help="serve the index as it is, without keeping it fresh"
    )
    serve.add_argument(
        "--no-vault",
        action="store_true",
        help="a reader: answer from the cache alone, never opening the notes' files nor writing\n"
        "the notes (write tools hidden); a writer (weaver daemon) keeps the cache fresh. On\n"
        "PostgreSQL, trigger_workflow queues runs for the workers (weaver worker)",
    )
    _add_processes_option(serve)
    serve.set_defaults(command=cmd_serve)

    worker = add_command(
        commands,
        "worker",
        "run workflows from the job system (database_url on PostgreSQL)",
        "Runs until stopped: takes the workflow runs queued by the writer, the readers and\n"
        "`weaver trigger` on any host, runs them, records their results. Start one or more\n"
        "per host; see docs/deployment.md.",
    )
    worker.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="runs at once in this worker (default: workflow_workers, 4)",
    )
    worker.set_defaults(command=cmd_worker)

    mcp_config = add_command(
        commands,
        "mcp-config",
        "print the entry that connects an MCP client to this vault",
        "Prints, with absolute paths, how a client starts this weaver on this vault: for\n"
        "Claude Desktop and Cursor the JSON to merge into the client's `mcpServers`, for\n"
        "Claude Code the `claude mcp add` command to run. Where to put it goes to stderr.",
    )
    mcp_config.add_argument(
        "--client",
        choices=["claude-desktop", "claude-code", "cursor"],
        default="claude-desktop",
        help="the client to print the entry for (default: claude-desktop)",
    )
    mcp_config.add_argument(
        "--name", default="weaver", help="the server's name in the client (default: weaver)"
    )
    mcp_config.set_defaults(command=cmd_mcp_config)


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.locks import writer_lock_for

    lock = writer_lock_for(settings)
    try:
        if not lock.try_acquire():
            return _show_kept_cache(args, settings, lock.holder())
        app = open_app(settings, check=True)
        try:
            console = Console(stderr=True)
            if console.is_terminal and not console.is_dumb_terminal:
                with IndexDisplay(console) as display, _logging_through(console, settings):
                    report = app.indexer.reconcile(full=args.full, observer=display)
            else:
                report = app.indexer.reconcile(full=args.full)
        finally:
            app.close()
    finally:
        lock.close()
    summary = report.summary()
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_index_summary(settings.vault, summary))
    return 0


@contextmanager
def _logging_through(console: Console, settings: Settings) -> Iterator[None]:
    """Log lines printed through the console, so they land above a progress bar, not on it."""
    configure_logging(settings.log_level, settings.log_format, log_stream(console))
    try:
        yield
    finally:
        configure_logging(settings.log_level, settings.log_format)


def _show_kept_cache(args: argparse.Namespace, settings: Settings, holder: str) -> int:
    """Another process (a daemon or `serve`) writes the cache: show its state and leave it be."""
    from sqlalchemy.exc import SQLAlchemyError

    from weaver.cache import read
    from weaver.cache.db import open_engine, schema_revision

    if args.full:
        raise DaemonError(
            f"cannot re-read every note now: process {holder} (a weaver daemon or serve) keeps "
            "this cache and is its only writer. Stop it, run `weaver index --full`, then start "
            "it again"
        )
    db = open_engine(settings.db_url)
    notes, last_change = 0, None
    try:
        if schema_revision(db) is not None:  # else the writer is still creating it
            with db.connect() as conn:
                notes, last_change = read.count_notes(conn), read.last_updated(conn)
    except SQLAlchemyError as exc:
        raise CacheError(f"cannot read the cache at {settings.db_url}: {exc}") from exc
    finally:
        db.dispose()
    if args.json:
        pid: int | str = int(holder) if holder.isdigit() else holder
        print(json.dumps({"kept_by": pid, "notes": notes, "last_updated": last_change}))
    else:
        print(format_kept_cache(settings.vault, holder, notes, last_change, _now_ms()))
    return 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _add_processes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http-processes",
        type=int,
        metavar="N",
        help="with HTTP: N processes share the port, the writer and N-1 readers over the same\n"
        "cache, stateless (default: http_processes, 1: one stateful process)",
    )


def cmd_daemon(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.daemon import run_daemon
    from weaver.mcp_server.serve import check_http_settings

    settings = _with_flags(settings, {"http_processes": args.http_processes})
    if not args.no_http:  # before the daemon's lock file is made
        check_http_settings(settings)
    run_daemon(settings, http=not args.no_http, standby=args.standby)
    return 0


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.worker import run_worker

    settings = _with_flags(settings, {"workflow_workers": args.concurrency})
    run_worker(settings, concurrency=settings.workflow_workers)
    return 0


# The options that override a setting, where the flag's name is not the setting's.
FLAG_OF_SETTING = {"http_host": "host", "http_port": "port", "workflow_workers": "concurrency"}


def _with_flags(settings: Settings, flags: dict[str, object]) -> Settings:
    updates = {key: value for key, value in flags.items() if value is not None}
    if not updates:
        return settings
    try:
        return Settings.model_validate({**settings.model_dump(), **updates})
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = str(error["loc"][0]) if error["loc"] else "option"
        flag = FLAG_OF_SETTING.get(key, key).replace("_", "-")
        value = shown(key, error["input"])
        raise ConfigError(f"invalid --{flag}: {value}: {expected(error)}") from exc


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.mcp_server.serve import run_serve

    if args.transport == "stdio" and args.http_processes is not None:
        raise ConfigError("--http-processes applies to --transport http only")
    flags = {"http_host": args.host, "http_port": args.port, "http_processes": args.http_processes}
    settings = _with_flags(settings, flags)
    watch = not (args.no_watch or args.no_vault)
    run_serve(settings, transport=args.transport, watch=watch, files=not args.no_vault)
    return 0


def cmd_mcp_config(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.client_config import (
        CLIENT_FILES,
        find_weaver_command,
        render_entry,
        serve_arguments,
    )

    config_file = find_config_file(args.config, os.environ)
    serve_args = serve_arguments(settings, config_file)
    print(render_entry(args.client, args.name, find_weaver_command(), serve_args))
    print(f"weaver: for {args.client}: {CLIENT_FILES[args.client]}", file=sys.stderr)
    return 0


# -- workflows: trigger, workflows, history, records, status (thin edges over WorkflowEngine) --


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
    history.add_argument("--status", choices=EXECUTION_STATUSES, help="only runs in this state")
    history.add_argument("--limit", type=int, default=20, help="runs to show, 1-100 (default: 20)")
    history.add_argument("--offset", type=int, default=0, help="runs to skip, for the next page")
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
        "--limit", type=int, default=20, help="records to show, 1-500 (default: 20)"
    )
    records.add_argument("--offset", type=int, default=0, help="records to skip, for paging")
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
    from weaver.host.locks import writer_lock_for
    from weaver.runtime.engines import background_for, engine_for

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
    from weaver.engine import WorkflowRequestError
    from weaver.host.locks import daemon_running

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
    if text.strip().isdigit():
        return int(text)
    moment = parse_moment(text)
    if moment is None:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (YYYY-MM-DD, YYYY-MM-DDTHH:MM or epoch ms)"
        )
    return moment


# ---------------------------------------------------------------- weaver search


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


def run() -> None:
    structlog.contextvars.clear_contextvars()
    sys.exit(main())


if __name__ == "__main__":
    run()
