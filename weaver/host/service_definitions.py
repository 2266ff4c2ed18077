"""The text of `weaver daemon`'s service definition on each platform: a systemd user unit, a
launchd agent, a Task Scheduler task. Pure: the daemon's command line (absolute paths) in, the
file's text out.

They say what config/weaver.service and config/com.weaver.daemon.plist say (those stay in the
repository for people who set a service up by hand; tests/host/test_service_install.py holds
the two in step): restart after a crash and not after a clean stop, SIGTERM and 30 s to stop,
JSON log lines.
"""

from __future__ import annotations

import plistlib
from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree

UNIT_NAME = "weaver.service"
AGENT_LABEL = "com.weaver.daemon"
TASK_NAME = "Weaver"
DESCRIPTION = "Weaver: shadow cache, workflows and MCP server for a markdown vault"
ENVIRONMENT = {"WEAVER_LOG_FORMAT": "json"}
STOP_TIMEOUT_S = 30
RESTART_DELAY_S = 5
TASK_NAMESPACE = "http://schemas.microsoft.com/windows/2004/02/mit/task"


def systemd_unit(command: Sequence[str]) -> str:
    """A systemd user unit; its logs go to the journal (`journalctl --user -u weaver`)."""
    environment = " ".join(f"{key}={value}" for key, value in ENVIRONMENT.items())
    return "\n".join(
        [
            "# Written by `weaver service install`; `weaver service uninstall` removes it.",
            "[Unit]",
            f"Description={DESCRIPTION}",
            "After=default.target",
            "",
            "[Service]",
            "Type=simple",
            f"ExecStart={systemd_command_line(command)}",
            "# SIGTERM stops it cleanly (runs under way are finished or recorded) with exit 0.",
            "KillSignal=SIGTERM",
            f"TimeoutStopSec={STOP_TIMEOUT_S}",
            "Restart=on-failure",
            f"RestartSec={RESTART_DELAY_S}",
            f"Environment={environment}",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )


def systemd_command_line(words: Sequence[str]) -> str:
    """ExecStart's words: quoted where systemd would split or unescape them, with `%` (a unit
    specifier) and `$` (a variable) doubled, as systemd.service(5) asks."""
    return " ".join(_systemd_word(word) for word in words)


def _systemd_word(word: str) -> str:
    escaped = word.replace("%", "%%").replace("$", "$$")
    if escaped and not any(char in escaped for char in " \t\"'\\;"):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def launchd_agent(command: Sequence[str], log_file: Path) -> str:
    """A launchd agent: started at log-in, started again when it exits with an error; its
    stdout and stderr go to `log_file` (launchd keeps no log of its own)."""
    agent = {
        "Label": AGENT_LABEL,
        "ProgramArguments": list(command),
        "EnvironmentVariables": dict(ENVIRONMENT),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ExitTimeOut": STOP_TIMEOUT_S,
        "ThrottleInterval": RESTART_DELAY_S,
        "StandardErrorPath": str(log_file),
        "StandardOutPath": str(log_file),
    }
    return plistlib.dumps(agent).decode("utf-8")


def scheduled_task(command: Sequence[str], log_file: Path, user: str) -> str:
    """A Task Scheduler task (schema 1.2) started at the user's log-on, in the user's session
    without elevation, restarted after a failure, and never stopped for running long (the
    default stops a task after three days) or for the laptop going on battery.

    The daemon runs under `cmd.exe` so that its stderr reaches a log file: a task has no
    journal, and nothing else would keep what it logs."""
    root = ElementTree.Element("Task", version="1.2", xmlns=TASK_NAMESPACE)
    info = ElementTree.SubElement(root, "RegistrationInfo")
    _text(info, "Description", f"{DESCRIPTION}. Written by `weaver service install`.")
    trigger = ElementTree.SubElement(ElementTree.SubElement(root, "Triggers"), "LogonTrigger")
    _text(trigger, "Enabled", "true")
    _text(trigger, "UserId", user)
    principal = ElementTree.SubElement(ElementTree.SubElement(root, "Principals"), "Principal")
    principal.set("id", "Author")
    _text(principal, "UserId", user)
    _text(principal, "LogonType", "InteractiveToken")
    _text(principal, "RunLevel", "LeastPrivilege")
    settings = ElementTree.SubElement(root, "Settings")
    for name, value in _TASK_SETTINGS:
        _text(settings, name, value)
    restart = ElementTree.SubElement(settings, "RestartOnFailure")
    _text(restart, "Interval", "PT1M")  # the shortest Task Scheduler takes
    _text(restart, "Count", "999")
    actions = ElementTree.SubElement(root, "Actions", Context="Author")
    execute = ElementTree.SubElement(actions, "Exec")
    _text(execute, "Command", "cmd.exe")
    _text(execute, "Arguments", task_arguments(command, log_file))
    ElementTree.indent(root)
    body = ElementTree.tostring(root, encoding="unicode")
    # UTF-16 is what Task Scheduler writes and what `schtasks /XML` reads without doubt.
    return f'<?xml version="1.0" encoding="UTF-16"?>\n{body}\n'


# In the order Task Scheduler exports them.
_TASK_SETTINGS = (
    ("MultipleInstancesPolicy", "IgnoreNew"),
    ("DisallowStartIfOnBatteries", "false"),
    ("StopIfGoingOnBatteries", "false"),
    ("AllowHardTerminate", "true"),
    ("StartWhenAvailable", "true"),
    ("AllowStartOnDemand", "true"),
    ("Enabled", "true"),
    ("ExecutionTimeLimit", "PT0S"),
)


def task_arguments(command: Sequence[str], log_file: Path) -> str:
    """`cmd.exe`'s arguments: the daemon's command line, stderr appended to the log file.
    Every word quoted (a Windows path cannot hold `"`), so that `&`, `^` or a space in a path
    stays in its word; the whole wrapped once more, as `cmd /c` strips the outer quotes."""
    words = " ".join(f'"{word}"' for word in command)
    return f'/d /c "{words} 2>>"{log_file}""'


def _text(parent: ElementTree.Element, tag: str, text: str) -> None:
    ElementTree.SubElement(parent, tag).text = text
