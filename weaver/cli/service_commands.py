"""`weaver service install|uninstall|status`: `weaver daemon` as a background service of the
current user, through the platform's own service manager (`weaver.host.service`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from weaver.cli.exits import add_command

if TYPE_CHECKING:  # imported when the command runs, not to build the parser
    from weaver.config import Settings
    from weaver.host.service import Platform, Step, UserFolders

PLATFORM_CHOICES = ("linux", "macos", "windows")
MANAGER_NAMES = {
    "linux": "a systemd user service",
    "macos": "a launchd agent",
    "windows": "a Task Scheduler task started at log-on",
}


def add_service_commands(
    commands: Any, add_common_options: Callable[[argparse.ArgumentParser], None]
) -> None:
    """`service` and its three actions, each taking the common options after it as well."""
    service = add_command(
        commands,
        "service",
        "run `weaver daemon` in the background for this user, started at log-in",
        "install writes the service's definition (a systemd user unit on Linux, a launchd\n"
        "agent on macOS, a Task Scheduler task on Windows), for the vault and config file in\n"
        "use, and starts it; uninstall stops it and removes that file; status asks the\n"
        "service manager. See docs/service.md.",
    )
    actions = service.add_subparsers(
        title="actions", metavar="ACTION", required=True, help="install, uninstall or status"
    )
    install = add_command(
        actions,
        "install",
        "install the daemon as a service and start it",
        "Writes the definition with absolute paths (this weaver, the config file in use, the\n"
        "vault), then has the service manager start it; installing again replaces it. Refuses\n"
        "when the manager is missing or not running for this user.",
    )
    install.set_defaults(command=cmd_service_install)
    uninstall = add_command(
        actions,
        "uninstall",
        "stop the service, remove what install made",
        "Stops the daemon and removes the definition install wrote; its logs stay. Without\n"
        "one installed it does nothing, so it can be run twice.",
    )
    uninstall.set_defaults(bare_command=cmd_service_uninstall)
    status = add_command(
        actions,
        "status",
        "what the service manager says of the service",
        "Whether the definition is installed, where the logs are, and what systemctl,\n"
        "launchctl or schtasks says of it.",
    )
    status.set_defaults(bare_command=cmd_service_status)
    for action in (install, uninstall, status):
        action.add_argument(
            "--platform",
            choices=PLATFORM_CHOICES,
            help="the service manager to use (default: this machine's)",
        )
        add_common_options(action)
    for action in (install, uninstall):
        action.add_argument(
            "--dry-run", action="store_true", help="print what would be written and run, do nothing"
        )


def cmd_service_install(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.config import find_config_file
    from weaver.host.client_config import command_arguments, find_weaver_command
    from weaver.host.service import (
        check_manager,
        check_vault_free,
        definition_file,
        install_plan,
        logs_hint,
        run_manager,
    )

    platform = _platform(args)
    folders = _folders()
    config_file = find_config_file(args.config, os.environ)
    command = [*find_weaver_command(), *command_arguments(settings, config_file, "daemon")]
    steps = install_plan(platform, folders, command)
    if args.dry_run:
        _print_plan(steps)
        return 0
    check_manager(platform, run_manager)
    check_vault_free(settings.vault, definition_file(platform, folders).exists())
    _carry_out(steps)
    print(f"Installed `weaver daemon` as {MANAGER_NAMES[platform]}; it runs now.")
    _print_done(steps)
    print(f"  the vault: {settings.vault}")
    print(f"  logs: {logs_hint(platform, folders)}")
    if platform == "linux":
        print("  it stops when you log out, unless: loginctl enable-linger $USER")
    print("  remove it: weaver service uninstall")
    return 0


def cmd_service_uninstall(args: argparse.Namespace) -> int:
    from weaver.host.service import check_manager, definition_file, run_manager, uninstall_plan

    platform = _platform(args)
    folders = _folders()
    steps = uninstall_plan(platform, folders)
    if not steps:
        print(f"Not installed (no {definition_file(platform, folders)}): nothing to do.")
        return 0
    if args.dry_run:
        _print_plan(steps)
        return 0
    check_manager(platform, run_manager)
    _carry_out(steps)
    print(f"Uninstalled `weaver daemon` as {MANAGER_NAMES[platform]}; it is stopped.")
    _print_done(steps)
    return 0


def cmd_service_status(args: argparse.Namespace) -> int:
    from weaver.host.service import definition_file, logs_hint, read_status, run_manager

    platform = _platform(args)
    folders = _folders()
    definition = definition_file(platform, folders)
    if not definition.exists():
        print(f"Not installed (no {definition}): `weaver service install` installs it.")
        return 0
    print(f"Installed: {definition}")
    print(f"Logs: {logs_hint(platform, folders)}")
    sys.stdout.write(read_status(platform, run_manager))
    return 0


def _platform(args: argparse.Namespace) -> Platform:
    from weaver.host.service import current_platform

    chosen: Platform | None = args.platform
    return chosen if chosen is not None else current_platform()


def _folders() -> UserFolders:
    from weaver.host.service import UserFolders

    return UserFolders(Path.home(), dict(os.environ))


def _carry_out(steps: Sequence[Step]) -> None:
    from weaver.host.service import carry_out, run_manager

    carry_out(steps, run_manager)


def _print_done(steps: Sequence[Step]) -> None:
    from weaver.host.service import describe_step

    for step in steps:
        print(f"  {describe_step(step, done=True)}")


def _print_plan(steps: Sequence[Step]) -> None:
    from weaver.host.service import describe_step

    print("Would do (--dry-run: nothing done):")
    for step in steps:
        print(describe_step(step, done=False))
