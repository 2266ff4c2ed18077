"""The service definitions shipped in config/ parse, and start `weaver ... daemon` the way the
README says, stopped with SIGTERM (which the daemon turns into a clean exit 0)."""

from __future__ import annotations

import configparser
import plistlib
import shlex
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / "config"


def test_systemd_user_unit_runs_the_daemon() -> None:
    unit = configparser.ConfigParser(interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    unit.read(CONFIG / "weaver.service")
    command = shlex.split(unit["Service"]["ExecStart"])
    assert command[0].endswith("/.venv/bin/weaver")
    assert command[-1] == "daemon"
    assert "--config" in command
    assert unit["Service"]["KillSignal"] == "SIGTERM"
    assert unit["Install"]["WantedBy"] == "default.target"


def test_launchd_agent_runs_the_daemon() -> None:
    with (CONFIG / "com.weaver.daemon.plist").open("rb") as handle:
        agent = plistlib.load(handle)
    assert agent["Label"] == "com.weaver.daemon"
    command = agent["ProgramArguments"]
    assert command[0].endswith("/.venv/bin/weaver")
    assert command[-1] == "daemon"
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}  # restart after a crash, not a stop
