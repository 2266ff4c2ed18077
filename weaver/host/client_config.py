"""The entry an MCP client needs to start this Weaver over stdio (`weaver mcp-config`).

Absolute paths throughout: a client starts the server from a folder of its own choosing, with
a PATH of its own, so neither a relative vault nor a bare `weaver` can be trusted to resolve.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from weaver import config
from weaver.config import Settings
from weaver.installation import Installer, this_installer, uvx_command

Client = Literal["claude-desktop", "claude-code", "cursor"]
CLIENTS: tuple[Client, ...] = ("claude-desktop", "claude-code", "cursor")
# Where each client reads its entries: said with the entry, for the person pasting it.
CLIENT_FILES: dict[Client, str] = {
    "claude-desktop": (
        "claude_desktop_config.json (Settings > Developer > Edit Config in Claude Desktop)"
    ),
    "cursor": "~/.cursor/mcp.json (all projects) or .cursor/mcp.json (one project)",
    "claude-code": "run it in a shell: Claude Code stores the entry itself",
}


def find_weaver_command(argv0: str | None = None, installer: Installer | None = None) -> list[str]:
    """How to start the `weaver` that is running now: `uvx weaver-mcp` when uvx runs it (its
    environment lives in uv's cache), its script when run as one, else the one on PATH, else
    this Python with `-m weaver` (a checkout run with `python -m weaver`)."""
    if (this_installer() if installer is None else installer) == "uvx":
        return uvx_command()
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    if script.stem == "weaver" and script.is_file():
        return [str(script.absolute())]
    on_path = shutil.which("weaver")
    if on_path:
        return [str(Path(on_path).absolute())]
    # Not resolved: a virtual environment's python is a symlink to the one it was made from.
    return [str(Path(sys.executable).absolute()), "-m", "weaver"]


def serve_arguments(settings: Settings, config_file: Path | None) -> list[str]:
    """`weaver serve`'s arguments for this vault (`command_arguments`)."""
    return command_arguments(settings, config_file, "serve")


def command_arguments(settings: Settings, config_file: Path | None, command: str) -> list[str]:
    """`weaver COMMAND`'s arguments for this vault, for a process started by someone else (an
    MCP client, a service manager): the config file (for every other setting) and the vault,
    both absolute; the database and the toolsets when they are not the default (the toolsets
    said on the command line, so that the entry shows which tools it serves)."""
    args = []
    if config_file is not None:
        args += ["--config", str(config_file.resolve())]
    args += ["--vault", str(settings.vault)]
    if settings.database_url:
        args += ["--db", settings.database_url]
    args.append(command)
    if list(settings.toolsets) != list(config.DEFAULT_TOOLSETS):
        every = set(settings.toolsets) == set(config.TOOLSETS)
        args += ["--toolsets", config.ALL_TOOLSETS if every else ",".join(settings.toolsets)]
    return args


def render_entry(client: Client, name: str, command: Sequence[str], args: Sequence[str]) -> str:
    """The text to paste: JSON with an `mcpServers` entry, or Claude Code's `claude mcp add`."""
    if client == "claude-code":
        # --scope user: the vault is absolute, so the server serves every project alike.
        return shlex.join(["claude", "mcp", "add", "--scope", "user", name, "--", *command, *args])
    entry = {"command": command[0], "args": [*command[1:], *args]}
    return json.dumps({"mcpServers": {name: entry}}, indent=2)
