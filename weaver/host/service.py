"""`weaver daemon` as a background service of the current user: what `weaver service install`,
`uninstall` and `status` write and run on each platform, as a plan of steps that is printed
(`--dry-run`) or carried out.

- Linux: a systemd user unit, enabled and (re)started with `systemctl --user`;
- macOS: a launchd agent in ~/Library/LaunchAgents, loaded with `launchctl bootstrap`;
- Windows: a Task Scheduler task started at log-on, made with `schtasks /Create /XML`. Not a
  Windows service: a service runs outside the user's session and profile, as another account,
  while the daemon reads the user's vault (often in a synced folder of the user's profile).

Install writes one definition file and makes the log folder; uninstall stops the service and
removes that file (the logs stay). Whether the service is installed is whether that file is
there, so uninstall runs nothing when it is not: it can be run twice.
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from weaver.errors import ServiceError
from weaver.host.service_definitions import (
    AGENT_LABEL,
    TASK_NAME,
    UNIT_NAME,
    launchd_agent,
    scheduled_task,
    systemd_unit,
)
from weaver.runtime.locks import daemon_running

Platform = Literal["linux", "macos", "windows"]
MANAGER: dict[Platform, str] = {"linux": "systemctl", "macos": "launchctl", "windows": "schtasks"}
# What `systemctl --user is-system-running` prints when a user manager answers at all.
_SYSTEMD_ALIVE = {"running", "degraded", "starting", "initializing", "maintenance", "stopping"}
COMMAND_TIMEOUT_S = 60


@dataclass(frozen=True)
class WriteFile:
    path: Path
    text: str
    encoding: str = "utf-8"


@dataclass(frozen=True)
class MakeFolder:
    path: Path


@dataclass(frozen=True)
class RemoveFile:
    path: Path


@dataclass(frozen=True)
class RunCommand:
    """A service manager's command; `may_fail` where failing means there was nothing to do
    (stopping a service that was not loaded)."""

    args: tuple[str, ...]
    may_fail: bool = False


Step = WriteFile | MakeFolder | RemoveFile | RunCommand
Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class UserFolders:
    """Where this user's services and logs go: the home folder and the environment that may
    move them (XDG_CONFIG_HOME, LOCALAPPDATA)."""

    home: Path
    env: Mapping[str, str]

    def systemd_folder(self) -> Path:
        given = Path(self.env.get("XDG_CONFIG_HOME", ""))
        # The XDG spec says a relative value (or none) is to be ignored.
        config = given if given.is_absolute() else self.home / ".config"
        return config / "systemd" / "user"

    def windows_folder(self) -> Path:
        local = self.env.get("LOCALAPPDATA", "")
        return (Path(local) if local else self.home / "AppData" / "Local") / "weaver"

    def macos_log(self) -> Path:
        return self.home / "Library" / "Logs" / "weaver" / "daemon.log"

    def windows_log(self) -> Path:
        return self.windows_folder() / "logs" / "daemon.log"


def current_platform(system: str | None = None) -> Platform:
    """This machine's platform, from `sys.platform`'s name."""
    name = sys.platform if system is None else system
    if name.startswith("linux"):
        return "linux"
    if name == "darwin":
        return "macos"
    if name in ("win32", "cygwin"):
        return "windows"
    raise ServiceError(f"no service manager Weaver knows on {name}: run `weaver daemon` yourself")


def definition_file(platform: Platform, folders: UserFolders) -> Path:
    """The one file install writes; whether it exists is whether the service is installed."""
    match platform:
        case "linux":
            return folders.systemd_folder() / UNIT_NAME
        case "macos":
            return folders.home / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
        case "windows":
            return folders.windows_folder() / "weaver-task.xml"


def logs_hint(platform: Platform, folders: UserFolders) -> str:
    """The command a person runs to follow the daemon's logs."""
    match platform:
        case "linux":
            return "journalctl --user -u weaver -f"
        case "macos":
            return f"tail -f {shlex.quote(str(folders.macos_log()))}"
        case "windows":
            return f"Get-Content -Wait '{folders.windows_log()}'   (in PowerShell)"


def windows_user(env: Mapping[str, str]) -> str:
    """The account whose log-on starts the task, as Windows names it: DOMAIN\\user."""
    domain = env.get("USERDOMAIN", "")
    name = getpass.getuser()
    return f"{domain}\\{name}" if domain else name


def install_plan(platform: Platform, folders: UserFolders, command: Sequence[str]) -> list[Step]:
    """Write the definition, then have the manager (re)start the daemon from it: installing
    again replaces a running daemon with one started from the new definition."""
    definition = definition_file(platform, folders)
    match platform:
        case "linux":
            return [
                MakeFolder(definition.parent),
                WriteFile(definition, systemd_unit(command)),
                RunCommand(("systemctl", "--user", "daemon-reload")),
                RunCommand(("systemctl", "--user", "enable", UNIT_NAME)),
                RunCommand(("systemctl", "--user", "restart", UNIT_NAME)),
            ]
        case "macos":
            log = folders.macos_log()
            domain = f"gui/{_uid()}"
            return [
                MakeFolder(definition.parent),
                MakeFolder(log.parent),
                WriteFile(definition, launchd_agent(command, log)),
                RunCommand(("launchctl", "bootout", f"{domain}/{AGENT_LABEL}"), may_fail=True),
                # Clears a `launchctl disable` left from before, as `load -w` did.
                RunCommand(("launchctl", "enable", f"{domain}/{AGENT_LABEL}")),
                RunCommand(("launchctl", "bootstrap", domain, str(definition))),
            ]
        case "windows":
            log = folders.windows_log()
            task = scheduled_task(command, log, windows_user(folders.env))
            return [
                MakeFolder(log.parent),
                WriteFile(definition, task, encoding="utf-16"),
                RunCommand(("schtasks", "/End", "/TN", TASK_NAME), may_fail=True),
                RunCommand(
                    ("schtasks", "/Create", "/TN", TASK_NAME, "/XML", str(definition), "/F")
                ),
                RunCommand(("schtasks", "/Run", "/TN", TASK_NAME)),
            ]


def uninstall_plan(platform: Platform, folders: UserFolders) -> list[Step]:
    """Stop the daemon and remove what install made; nothing when it is not installed."""
    definition = definition_file(platform, folders)
    if not definition.exists():
        return []
    match platform:
        case "linux":
            return [
                RunCommand(("systemctl", "--user", "disable", "--now", UNIT_NAME)),
                RemoveFile(definition),
                RunCommand(("systemctl", "--user", "daemon-reload")),
            ]
        case "macos":
            target = f"gui/{_uid()}/{AGENT_LABEL}"
            return [
                RunCommand(("launchctl", "bootout", target), may_fail=True),
                RemoveFile(definition),
            ]
        case "windows":
            return [
                RunCommand(("schtasks", "/End", "/TN", TASK_NAME), may_fail=True),
                RunCommand(("schtasks", "/Delete", "/TN", TASK_NAME, "/F")),
                RemoveFile(definition),
            ]


def status_command(platform: Platform) -> tuple[str, ...]:
    match platform:
        case "linux":
            return ("systemctl", "--user", "status", "--no-pager", UNIT_NAME)
        case "macos":
            return ("launchctl", "print", f"gui/{_uid()}/{AGENT_LABEL}")
        case "windows":
            return ("schtasks", "/Query", "/TN", TASK_NAME, "/V", "/FO", "LIST")


def _uid() -> int:
    """The user's id, which names launchd's per-user domain (`gui/<uid>`)."""
    if sys.platform == "win32":  # `--platform macos` on Windows: there is no uid to name
        raise ServiceError("a launchd agent cannot be planned on Windows: it has no user ids")
    return os.getuid()


def check_vault_free(vault: Path, installed: bool) -> None:
    """Refuse to install beside a daemon started by hand: the service's own would refuse to
    start next to it, and be started again after every refusal. (When a service is already
    installed, the daemon running is taken for its own, which install restarts.)"""
    if not installed and daemon_running(vault):
        raise ServiceError(
            f"a daemon is already running on {vault}: stop it, then install the service "
            "(which would start a second one, refused again at every restart)"
        )


def check_manager(platform: Platform, run: Runner) -> None:
    """Refuse before anything is written when the manager is missing, or (systemd) runs no
    manager for this user: a unit written there would never start."""
    manager = MANAGER[platform]
    if shutil.which(manager) is None:
        raise ServiceError(f"no `{manager}` on PATH: {_NO_MANAGER[platform]}")
    if platform == "linux":
        done = _run(run, ("systemctl", "--user", "is-system-running"))
        state = done.stdout.strip().split("\n")[0]
        if state not in _SYSTEMD_ALIVE:
            said = _output(done) or f"exit code {done.returncode}"
            raise ServiceError(
                f"systemd runs no user manager for {getpass.getuser()} "
                f"(`systemctl --user is-system-running`: {said}); log in through a session "
                "that starts one, or run `weaver daemon` under another supervisor"
            )


_NO_MANAGER: dict[Platform, str] = {
    "linux": "user services need systemd; run `weaver daemon` under another supervisor",
    "macos": "launchd's command is missing; run `weaver daemon` yourself",
    "windows": "Task Scheduler's command is missing; run `weaver daemon` yourself",
}


def carry_out(steps: Sequence[Step], run: Runner) -> None:
    """Do the steps in order; the first failed command stops the rest with a `ServiceError`
    naming it and what it printed."""
    for step in steps:
        match step:
            case MakeFolder(path):
                path.mkdir(parents=True, exist_ok=True)
            case WriteFile(path, text, encoding):
                _write_private(path, text.encode(encoding))
            case RemoveFile(path):
                path.unlink(missing_ok=True)
            case RunCommand(args, may_fail):
                done = _run(run, args)
                if done.returncode != 0 and not may_fail:
                    said = _output(done) or "no output"
                    raise ServiceError(
                        f"`{shlex.join(args)}` failed with exit code {done.returncode}: {said}"
                    )


def _write_private(path: Path, data: bytes) -> None:
    """Readable by the user alone: the command line may carry a database URL's password."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    path.chmod(0o600)


def run_manager(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """The default `Runner`: the command's output captured, for the error that names it."""
    return subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def _run(run: Runner, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return run(args)
    except OSError as exc:
        raise ServiceError(f"cannot run `{shlex.join(args)}`: {exc.strerror or exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise ServiceError(f"`{shlex.join(args)}` did not finish in {exc.timeout:g} s") from exc


def _output(done: subprocess.CompletedProcess[str]) -> str:
    """What a command printed, on one line (the CLI shows an error's first line only)."""
    text = f"{done.stderr or ''}\n{done.stdout or ''}"
    return " / ".join(line.strip() for line in text.splitlines() if line.strip())


def describe_step(step: Step, *, done: bool) -> str:
    """A step on one line as install and uninstall report it (`done`), or as `--dry-run`
    announces it, with a written file's whole text below the line naming it."""
    make, write, remove, run = (
        ("made", "wrote", "removed", "ran") if done else ("make", "write", "remove", "run")
    )
    match step:
        case MakeFolder(path):
            return f"{make} folder {path}"
        case WriteFile(path, text, encoding):
            return f"{write} {path} ({encoding})" + ("" if done else f":\n{text}")
        case RemoveFile(path):
            return f"{remove} {path}"
        case RunCommand(args, may_fail):
            return f"{run} {shlex.join(args)}" + ("  (a failure ignored)" if may_fail else "")


def read_status(platform: Platform, run: Runner) -> str:
    """What the manager prints of the service. Its exit code only says whether the daemon
    runs (`systemctl status` answers 3 for a stopped one), which its text says too."""
    done = _run(run, status_command(platform))
    return (done.stdout or "") + (done.stderr or "")
