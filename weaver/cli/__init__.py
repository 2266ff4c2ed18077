"""The `weaver` command line: a thin edge over the core; errors become one line and an exit code.

The root parser and `main` live here, each command group in its own module (`*_commands`), the
exit codes in `weaver.cli.exits`. What a command prints for a person is rendered by
`weaver.cli.console`; `--json` prints the core's data as it is.

Building the parser imports only what declares it: each command imports what it needs when it
runs, so `weaver --help` answers at once and a command pays only for its own imports.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from weaver import __version__
from weaver.cli.base_command import add_base_command
from weaver.cli.edit_commands import add_edit_commands
from weaver.cli.exits import EXIT_FAILURE, EXIT_USAGE, BareCommand, Command
from weaver.cli.index_commands import add_index_command
from weaver.cli.search_command import add_search_command
from weaver.cli.serve_commands import add_serve_commands, cmd_serve, cmd_worker
from weaver.cli.service_commands import add_service_commands
from weaver.cli.tag_commands import add_tag_commands
from weaver.cli.task_command import add_task_command
from weaver.cli.task_edit_commands import add_task_edit_commands
from weaver.cli.vaults_command import add_vaults_command
from weaver.cli.workflow_commands import add_workflow_commands
from weaver.errors import ConfigError, DaemonError, WeaverError

if TYPE_CHECKING:
    from weaver.edits.attribution import Actor

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
    bare: BareCommand | None = getattr(args, "bare_command", None)
    if args.command is None and bare is None:  # `weaver` alone: what it can do
        parser.print_help()
        return 0
    # Only now that a command is chosen (not for --help or a usage error): these import
    # pydantic, SQLAlchemy and structlog.
    from weaver.config import load_settings
    from weaver.edits.attribution import acting_as
    from weaver.log import configure_logging
    from weaver.runtime.settings_checks import SERVE_SETTINGS_CHECKS, SETTINGS_CHECKS

    try:
        if bare is not None:
            return bare(args)
        settings = load_settings(
            config_path=args.config,
            overrides={"vault": args.vault, "database_url": args.db, "log_level": args.log_level},
            vault_here=not (getattr(args, "no_vault", False) or args.command is cmd_worker),
            # serve checks its workflow tables itself, after its tool manifest (quick_start)
            checks=SERVE_SETTINGS_CHECKS if args.command is cmd_serve else SETTINGS_CHECKS,
        )
        configure_logging(settings.log_level, settings.log_format)
        command: Command = args.command
        with acting_as(command_actor(command)):  # the audit names the command for its writes
            return command(args, settings)
    except (ConfigError, DaemonError) as exc:
        print(f"weaver: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WeaverError as exc:
        # Imported here: the engine's package is not needed to start most commands.
        from weaver.engine.workflow_errors import WorkflowRequestError

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


def command_actor(command: Command) -> Actor:
    """`weaver tags rename` as the audit names it, from `cmd_tags_rename` (its function)."""
    from weaver.edits.attribution import Actor

    name = getattr(command, "__name__", "command").removeprefix("cmd_").replace("_", " ")
    return Actor("cli", "cli", "cli", f"weaver {name}")


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
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    parser.set_defaults(command=None)
    # One module per command group; the order is the order `weaver --help` lists them in.
    add_index_command(commands)
    add_serve_commands(commands)
    add_vaults_command(commands)
    add_workflow_commands(commands)
    add_tag_commands(commands)
    add_edit_commands(commands)
    add_search_command(commands)
    add_task_command(commands)
    add_base_command(commands)
    add_task_edit_commands(commands)
    add_service_commands(
        commands, functools.partial(_add_common_options, default=argparse.SUPPRESS)
    )
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


def run() -> None:
    sys.exit(main())
