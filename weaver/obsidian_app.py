"""The vaults the Obsidian app itself knows, read from its `obsidian.json`.

Only to help someone who has not told Weaver which vault to use: the error then lists these.
Obsidian keeps the file in its config folder: `$XDG_CONFIG_HOME/obsidian` (`~/.config/obsidian`)
on Linux, or the Flatpak's or the Snap's copy of it, `~/Library/Application Support/obsidian`
on macOS and `%APPDATA%\\obsidian` on Windows. Its shape:
`{"vaults": {"<id>": {"path": "/abs/folder", "ts": <epoch ms>, "open": true}}}`.
A missing, unreadable or malformed file means no known vaults, never an error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_FILE = "obsidian.json"


@dataclass(frozen=True, slots=True)
class KnownVault:
    path: Path
    opened_at: int  # epoch ms of Obsidian's last use of it (0 when not recorded)
    open: bool  # open in Obsidian when it last saved the file


def list_known_vaults(
    environ: Mapping[str, str] | None = None, platform: str | None = None
) -> list[KnownVault]:
    """The vaults of every `obsidian.json` found whose folder still exists: open ones first,
    then the most recently used."""
    env = os.environ if environ is None else environ
    found: dict[Path, KnownVault] = {}
    for config in config_files(env, platform or sys.platform):
        for vault in _read_vaults(config):
            if vault.path not in found and vault.path.is_dir():
                found[vault.path] = vault
    return sorted(found.values(), key=lambda v: (not v.open, -v.opened_at, str(v.path)))


def config_files(env: Mapping[str, str], platform: str) -> list[Path]:
    """Where Obsidian may keep `obsidian.json` on this platform, most usual first."""
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    if platform == "darwin":
        folders = [home / "Library" / "Application Support" / "obsidian"]
    elif platform.startswith("win"):
        appdata = env.get("APPDATA")
        folders = [Path(appdata) / "obsidian"] if appdata else []
        folders.append(home / "AppData" / "Roaming" / "obsidian")
    else:
        xdg = env.get("XDG_CONFIG_HOME")
        folders = [Path(xdg) / "obsidian"] if xdg else []
        folders += [
            home / ".config" / "obsidian",
            home / ".var" / "app" / "md.obsidian.Obsidian" / "config" / "obsidian",  # Flatpak
            home / "snap" / "obsidian" / "current" / ".config" / "obsidian",  # Snap
        ]
    return [folder / CONFIG_FILE for folder in dict.fromkeys(folders)]


def _read_vaults(config: Path) -> list[KnownVault]:
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    vaults = data.get("vaults") if isinstance(data, dict) else None
    if not isinstance(vaults, dict):
        return []
    return [vault for entry in vaults.values() if (vault := _vault(entry)) is not None]


def _vault(entry: Any) -> KnownVault | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        return None
    ts = entry.get("ts")
    opened_at = int(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else 0
    return KnownVault(Path(entry["path"]).expanduser(), opened_at, entry.get("open") is True)
