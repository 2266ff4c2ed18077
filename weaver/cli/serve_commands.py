"""daemon, serve, worker, mcp-config: the long-running processes and how clients reach them."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from weaver.cli.exits import add_command
from weaver.errors import ConfigError
from weaver.toolsets import DEFAULT_TOOLSETS, TOOLSETS

if TYPE_CHECKING:
    from weaver.config import Settings


def add_serve_commands(commands: Any) -> None:
    """daemon, serve, worker, mcp-config, registered on `weaver.cli.build_parser`'s subparsers."""
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
    _add_toolsets_option(daemon)
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
    _add_toolsets_option(serve)
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
    _add_toolsets_option(mcp_config, "the toolsets the entry serves")
    mcp_config.set_defaults(command=cmd_mcp_config)


def _add_processes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http-processes",
        type=int,
        metavar="N",
        help="with HTTP: N processes share the port, the writer and N-1 readers over the same\n"
        "cache, stateless (default: http_processes, 1: one stateful process)",
    )


def _add_toolsets_option(
    parser: argparse.ArgumentParser, what: str = "the MCP tools served, by toolset"
) -> None:
    parser.add_argument(
        "--toolsets",
        metavar="NAMES",
        help=f"{what}: some of {', '.join(TOOLSETS)} separated by commas, or all\n"
        f"(default: toolsets, {','.join(DEFAULT_TOOLSETS)}; see docs/tools.md)",
    )


def cmd_daemon(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.daemon import run_daemon
    from weaver.runtime.http import check_http_settings

    flags = {"http_processes": args.http_processes, "toolsets": args.toolsets}
    settings = _with_flags(settings, flags)
    if not args.no_http:  # before the daemon's lock file is made
        check_http_settings(settings)
    run_daemon(settings, http=not args.no_http, standby=args.standby)
    return 0


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.host.job_worker import run_worker

    settings = _with_flags(settings, {"workflow_workers": args.concurrency})
    run_worker(settings, concurrency=settings.workflow_workers)
    return 0


# The options that override a setting, where the flag's name is not the setting's.
FLAG_OF_SETTING = {"http_host": "host", "http_port": "port", "workflow_workers": "concurrency"}


def _with_flags(settings: Settings, flags: dict[str, object]) -> Settings:
    updates = {key: value for key, value in flags.items() if value is not None}
    if not updates:
        return settings
    from pydantic import ValidationError

    from weaver.config import Settings, expected, shown

    try:
        return Settings.model_validate({**settings.model_dump(), **updates})
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = str(error["loc"][0]) if error["loc"] else "option"
        flag = FLAG_OF_SETTING.get(key, key).replace("_", "-")
        value = shown(key, error["input"])
        raise ConfigError(f"invalid --{flag}: {value}: {expected(error)}") from exc


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.transport == "stdio" and args.http_processes is not None:
        raise ConfigError("--http-processes applies to --transport http only")
    flags = {
        "http_host": args.host,
        "http_port": args.port,
        "http_processes": args.http_processes,
        "toolsets": args.toolsets,
    }
    settings = _with_flags(settings, flags)
    watch = not (args.no_watch or args.no_vault)
    if args.transport == "stdio" and not args.no_vault:
        from weaver.host.quick_start import serve_from_manifest

        if serve_from_manifest(settings, watch):  # else no manifest yet: serve as ever
            return 0
    from weaver.config import find_config_file
    from weaver.host.serve import run_serve
    from weaver.runtime.settings_checks import check_workflow_tables

    check_workflow_tables(settings, find_config_file(args.config, os.environ))

    run_serve(settings, transport=args.transport, watch=watch, files=not args.no_vault)
    return 0


def cmd_mcp_config(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.config import find_config_file
    from weaver.host.client_config import (
        CLIENT_FILES,
        find_weaver_command,
        render_entry,
        serve_arguments,
    )

    settings = _with_flags(settings, {"toolsets": args.toolsets})
    config_file = find_config_file(args.config, os.environ)
    serve_args = serve_arguments(settings, config_file)
    print(render_entry(args.client, args.name, find_weaver_command(), serve_args))
    print(f"weaver: for {args.client}: {CLIENT_FILES[args.client]}", file=sys.stderr)
    return 0
