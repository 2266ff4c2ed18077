"""`weaver service install|uninstall|status` on each platform, run on Linux: the definition it
writes (parsed as systemd, launchd and Task Scheduler read it), the service manager's commands
it runs (fake `systemctl`, `launchctl` and `schtasks` first on PATH record them), and the errors
a person sees when the manager is missing, down, or refuses."""

from __future__ import annotations

import configparser
import getpass
import json
import os
import plistlib
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.helpers import clean_env
from weaver.cli import main
from weaver.host.service_definitions import (
    TASK_NAMESPACE,
    launchd_agent,
    systemd_command_line,
    systemd_unit,
)
from weaver.runtime.locks import daemon_lock

CONFIG = Path(__file__).resolve().parents[2] / "config"
ROOT = Path(__file__).resolve().parents[2]
NS = {"t": TASK_NAMESPACE}

# Records its name and arguments, tab-separated, one line a call. `systemctl --user
# is-system-running` answers "running" unless FAKE_SYSTEMD_DOWN is set, where it fails as a
# container's does; a call whose arguments contain FAKE_MANAGER_FAIL fails with a message.
FAKE_MANAGER = r"""#!/bin/sh
{ printf '%s' "${0##*/}"; for a in "$@"; do printf '\t%s' "$a"; done; printf '\n'; } \
    >> "$FAKE_MANAGER_LOG"
if [ "$*" = "--user is-system-running" ]; then
    if [ -z "$FAKE_SYSTEMD_DOWN" ]; then echo running; exit 0; fi
    echo "Failed to connect to bus: No medium found" >&2; exit 1
fi
if [ -n "$FAKE_MANAGER_FAIL" ] && [ "${*#*"$FAKE_MANAGER_FAIL"}" != "$*" ]; then
    echo "Failed to enable unit: Access denied" >&2; exit 4
fi
exit 0
"""


class Managers:
    """The fake managers' folder and what they were asked, as argument lists."""

    def __init__(self, folder: Path, log: Path) -> None:
        self.folder = folder
        self.log = log

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [line.split("\t") for line in lines]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("LOCALAPPDATA", raising=False)
    monkeypatch.delenv("USERDOMAIN", raising=False)
    for name in [name for name in os.environ if name.startswith("WEAVER_")]:
        monkeypatch.delenv(name)
    return folder


@pytest.fixture
def managers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Managers:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("systemctl", "launchctl", "schtasks"):
        script = folder / name
        script.write_text(FAKE_MANAGER, encoding="utf-8")
        script.chmod(0o755)
    log = tmp_path / "manager-calls.log"
    monkeypatch.setenv("FAKE_MANAGER_LOG", str(log))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return Managers(folder, log)


@pytest.fixture
def config_file(tmp_path: Path, vault_dir: Path) -> Path:
    path = tmp_path / "conf" / "weaver.toml"
    path.parent.mkdir()
    (vault_dir / "Welcome.md").write_text("# Welcome\n", encoding="utf-8")
    path.write_text(f'vault = "{vault_dir}"\nlog_level = "error"\n', encoding="utf-8")
    return path


def install(config_file: Path, platform: str, *more: str) -> int:
    # --config given relative, as a person types it: the service must name it absolute.
    relative = os.path.relpath(config_file)
    return main(["service", "install", "--platform", platform, "--config", relative, *more])


def read_unit(text: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    unit.read_string(text)
    return unit


def unit_command(home: Path) -> list[str]:
    unit = read_unit((home / ".config/systemd/user/weaver.service").read_text(encoding="utf-8"))
    return shlex.split(unit["Service"]["ExecStart"])


def agent_command(home: Path) -> list[str]:
    path = home / "Library/LaunchAgents/com.weaver.daemon.plist"
    command: list[str] = plistlib.loads(path.read_bytes())["ProgramArguments"]
    return command


def task_command(home: Path) -> list[str]:
    task = ElementTree.parse(home / "AppData/Local/weaver/weaver-task.xml").getroot()
    arguments = task.findtext("t:Actions/t:Exec/t:Arguments", namespaces=NS) or ""
    # /d /c "<the daemon's words, each quoted> 2>>"<log>""
    inner = re.fullmatch(r'/d /c "(.*) 2>>"[^"]+""', arguments)
    assert inner is not None, arguments
    return shlex.split(inner.group(1))


COMMAND_OF: dict[str, Callable[[Path], list[str]]] = {
    "linux": unit_command,
    "macos": agent_command,
    "windows": task_command,
}


# -- what install writes -----------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_install_names_the_config_and_vault_absolute(
    platform: str, home: Path, managers: Managers, config_file: Path, vault_dir: Path
) -> None:
    assert install(config_file, platform) == 0
    command = COMMAND_OF[platform](home)
    assert Path(command[0]).is_absolute() and Path(command[0]).exists()
    tail = ["--config", str(config_file.resolve()), "--vault", str(vault_dir.resolve()), "daemon"]
    assert command[-len(tail) :] == tail


def test_linux_unit_is_the_shipped_one_with_real_paths(
    home: Path, managers: Managers, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert install(config_file, "linux") == 0
    path = home / ".config/systemd/user/weaver.service"
    written = read_unit(path.read_text(encoding="utf-8"))
    shipped = read_unit((CONFIG / "weaver.service").read_text(encoding="utf-8"))
    for section in ("Unit", "Service", "Install"):
        mine = {k: v for k, v in written[section].items() if k != "ExecStart"}
        theirs = {k: v for k, v in shipped[section].items() if k != "ExecStart"}
        assert mine == theirs, section  # restart on failure, SIGTERM, JSON logs, default.target
    assert path.stat().st_mode & 0o777 == 0o600  # the command line may hold a database password
    out = capsys.readouterr().out
    assert f"wrote {path}" in out
    assert "journalctl --user -u weaver -f" in out


def test_linux_install_follows_xdg_config_home(
    home: Path,
    managers: Managers,
    config_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert install(config_file, "linux") == 0
    assert (tmp_path / "xdg/systemd/user/weaver.service").is_file()
    assert not (home / ".config").exists()


def test_macos_agent_is_the_shipped_one_with_real_paths(
    home: Path, managers: Managers, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert install(config_file, "macos") == 0
    written = plistlib.loads((home / "Library/LaunchAgents/com.weaver.daemon.plist").read_bytes())
    shipped = plistlib.loads((CONFIG / "com.weaver.daemon.plist").read_bytes())
    paths = {"ProgramArguments", "StandardErrorPath", "StandardOutPath", "ThrottleInterval"}
    assert {k: v for k, v in written.items() if k not in paths} == {
        k: v for k, v in shipped.items() if k not in paths
    }
    log = home / "Library/Logs/weaver/daemon.log"
    assert written["StandardErrorPath"] == written["StandardOutPath"] == str(log)
    assert log.parent.is_dir()  # launchd makes the file, not its folder
    assert f"tail -f {log}" in capsys.readouterr().out


def test_windows_task_starts_at_logon_restarts_and_never_times_out(
    home: Path, managers: Managers, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USERDOMAIN", "DESK")
    monkeypatch.setenv("LOCALAPPDATA", str(home / "AppData" / "Local"))
    assert install(config_file, "windows") == 0
    path = home / "AppData/Local/weaver/weaver-task.xml"
    assert path.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")  # UTF-16, with its BOM
    task = ElementTree.parse(path).getroot()
    user = f"DESK\\{getpass.getuser()}"
    assert task.findtext("t:Triggers/t:LogonTrigger/t:UserId", namespaces=NS) == user
    principal = task.find("t:Principals/t:Principal", NS)
    assert principal is not None
    assert principal.findtext("t:LogonType", namespaces=NS) == "InteractiveToken"
    assert principal.findtext("t:RunLevel", namespaces=NS) == "LeastPrivilege"
    assert task.findtext("t:Settings/t:ExecutionTimeLimit", namespaces=NS) == "PT0S"
    assert task.findtext("t:Settings/t:RestartOnFailure/t:Interval", namespaces=NS) == "PT1M"
    assert task.findtext("t:Settings/t:DisallowStartIfOnBatteries", namespaces=NS) == "false"
    assert task.findtext("t:Actions/t:Exec/t:Command", namespaces=NS) == "cmd.exe"
    log = home / "AppData/Local/weaver/logs/daemon.log"
    arguments = task.findtext("t:Actions/t:Exec/t:Arguments", namespaces=NS) or ""
    assert arguments.endswith(f' 2>>"{log}""')
    assert log.parent.is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_the_installed_command_runs_this_weaver_on_the_vault(
    platform: str, home: Path, managers: Managers, config_file: Path, vault_dir: Path
) -> None:
    """The service's own words, but `mcp-config` for `daemon`: the executable starts, and
    reads the config and vault it was given, from a folder of its own (as a manager starts
    it)."""
    assert install(config_file, platform) == 0
    command = COMMAND_OF[platform](home)
    env = {**clean_env(), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*command[:-1], "mcp-config"],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["weaver"]
    assert str(vault_dir.resolve()) in entry["args"]


# -- the manager's commands --------------------------------------------------------------------


def test_install_runs_the_managers_commands_in_order(
    home: Path, managers: Managers, config_file: Path
) -> None:
    uid = str(os.getuid())
    plist = home / "Library/LaunchAgents/com.weaver.daemon.plist"
    task_file = home / "AppData/Local/weaver/weaver-task.xml"
    expected = {
        "linux": [
            ["systemctl", "--user", "is-system-running"],
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "weaver.service"],
            ["systemctl", "--user", "restart", "weaver.service"],
        ],
        "macos": [
            ["launchctl", "bootout", f"gui/{uid}/com.weaver.daemon"],
            ["launchctl", "enable", f"gui/{uid}/com.weaver.daemon"],
            ["launchctl", "bootstrap", f"gui/{uid}", str(plist)],
        ],
        "windows": [
            ["schtasks", "/End", "/TN", "Weaver"],
            ["schtasks", "/Create", "/TN", "Weaver", "/XML", str(task_file), "/F"],
            ["schtasks", "/Run", "/TN", "Weaver"],
        ],
    }
    for platform, calls in expected.items():
        managers.log.unlink(missing_ok=True)
        assert install(config_file, platform) == 0
        assert managers.calls() == calls, platform


def test_uninstall_removes_what_install_made_and_runs_twice(
    home: Path, managers: Managers, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uid = str(os.getuid())
    expected = {
        "linux": [
            ["systemctl", "--user", "is-system-running"],
            ["systemctl", "--user", "disable", "--now", "weaver.service"],
            ["systemctl", "--user", "daemon-reload"],
        ],
        "macos": [["launchctl", "bootout", f"gui/{uid}/com.weaver.daemon"]],
        "windows": [
            ["schtasks", "/End", "/TN", "Weaver"],
            ["schtasks", "/Delete", "/TN", "Weaver", "/F"],
        ],
    }
    for platform, calls in expected.items():
        before = _files(home)
        assert install(config_file, platform) == 0
        managers.log.unlink(missing_ok=True)
        assert main(["service", "uninstall", "--platform", platform]) == 0
        assert managers.calls() == calls, platform
        made_by_install = _files(home) - before
        # What stays: the folders, and the log folder (the daemon's logs are the user's).
        assert all(path.is_dir() for path in made_by_install), made_by_install
        capsys.readouterr()
        assert main(["service", "uninstall", "--platform", platform]) == 0
        assert "Not installed" in capsys.readouterr().out
        assert managers.calls() == calls  # nothing more was run


def _files(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def test_dry_run_prints_the_file_and_commands_and_does_nothing(
    home: Path, managers: Managers, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert install(config_file, "linux", "--dry-run") == 0
    out = capsys.readouterr().out
    unit_text = out.split("(utf-8):\n", 1)[1].split("\nrun ", 1)[0]
    assert shlex.split(read_unit(unit_text)["Service"]["ExecStart"])[-1] == "daemon"
    assert "run systemctl --user enable weaver.service" in out
    assert list(home.iterdir()) == []
    assert managers.calls() == []


def test_status_says_whether_installed_and_what_the_manager_says(
    home: Path, managers: Managers, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["service", "status", "--platform", "linux"]) == 0
    assert "Not installed" in capsys.readouterr().out
    assert managers.calls() == []
    assert install(config_file, "linux") == 0
    managers.log.unlink()
    capsys.readouterr()
    assert main(["service", "status", "--platform", "linux"]) == 0
    assert "journalctl --user -u weaver -f" in capsys.readouterr().out
    assert managers.calls() == [["systemctl", "--user", "status", "--no-pager", "weaver.service"]]


# -- refusals ----------------------------------------------------------------------------------


def test_a_failing_manager_command_is_named_with_its_output(
    home: Path,
    managers: Managers,
    config_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FAKE_MANAGER_FAIL", "enable")
    assert install(config_file, "linux") == 1
    err = capsys.readouterr().err
    assert err.startswith("weaver: `systemctl --user enable weaver.service` failed with exit")
    assert "code 4: Failed to enable unit: Access denied" in err
    assert ["systemctl", "--user", "restart", "weaver.service"] not in managers.calls()


def test_install_refuses_where_systemd_runs_no_user_manager(
    home: Path,
    managers: Managers,
    config_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FAKE_SYSTEMD_DOWN", "1")
    assert install(config_file, "linux") == 1
    err = capsys.readouterr().err
    assert "systemd runs no user manager" in err
    assert "Failed to connect to bus" in err
    assert list(home.iterdir()) == []  # nothing written that would never start


@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_install_refuses_without_the_service_manager(
    platform: str,
    home: Path,
    config_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert install(config_file, platform) == 1
    manager = {"linux": "systemctl", "macos": "launchctl", "windows": "schtasks"}[platform]
    assert f"weaver: no `{manager}` on PATH" in capsys.readouterr().err
    assert list(home.iterdir()) == []


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="no systemctl on this host")
def test_this_hosts_systemctl_answers_as_the_check_expects(
    home: Path, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real `systemctl --user`: in a container without a user manager, install refuses
    with systemd's own words; where one runs, the check lets install through (not run further
    here: it would install a service on the developer's machine)."""
    from weaver.host.service import check_manager, run_manager

    running = run_manager(["systemctl", "--user", "is-system-running"]).stdout.strip()
    if running in ("running", "degraded"):
        check_manager("linux", run_manager)
        return
    assert install(config_file, "linux") == 1
    assert "systemd runs no user manager" in capsys.readouterr().err


# -- the pure parts ----------------------------------------------------------------------------


def test_systemd_words_with_spaces_and_specifiers_survive() -> None:
    words = ["/home/ann/My Apps/weaver", "--vault", "/home/ann/100% notes", "daemon"]
    line = systemd_command_line(words)
    assert "%%" in line
    assert shlex.split(line.replace("%%", "%")) == words
    unit = read_unit(systemd_unit(words))
    assert unit["Service"]["ExecStart"] == line


def test_launchd_agent_keeps_every_word_apart() -> None:
    words = ["/Users/ann/My Apps/weaver", "--vault", "/Users/ann/Notes & more", "daemon"]
    agent = plistlib.loads(launchd_agent(words, Path("/tmp/weaver.log")).encode())
    assert agent["ProgramArguments"] == words


def test_weaver_service_alone_asks_for_an_action(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["service"])
    assert stopped.value.code == 2
    assert "ACTION" in capsys.readouterr().err


def test_install_refuses_beside_a_daemon_started_by_hand(
    home: Path,
    managers: Managers,
    config_file: Path,
    vault_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with daemon_lock(vault_dir):
        assert install(config_file, "linux") == 1
    assert f"a daemon is already running on {vault_dir.resolve()}" in capsys.readouterr().err
    assert list(home.iterdir()) == []
    # Installed already, the running daemon is the service's own: installing again restarts it.
    assert install(config_file, "linux") == 0
    with daemon_lock(vault_dir):
        assert install(config_file, "linux") == 0
