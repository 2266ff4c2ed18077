"""`weaver vaults`: the vaults the config names, which one is the default, where each one's
cache is."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from weaver.cli.exits import add_command

if TYPE_CHECKING:
    from weaver.config import Settings


def add_vaults_command(commands: Any) -> None:
    """`weaver vaults`, registered on `weaver.cli.build_parser`'s subparsers."""
    vaults = add_command(
        commands,
        "vaults",
        "list the vaults that weaver serve and weaver daemon serve",
        "Lists each vault of the settings ([vaults.NAME] tables, or the one vault) with its\n"
        "folder and where its index is kept, marking the default one: the vault a tool call\n"
        "or a dashboard page answers from when it names none.",
    )
    vaults.add_argument("--json", action="store_true", help="print the list as one JSON object")
    vaults.set_defaults(command=cmd_vaults)


def cmd_vaults(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.config import shown_url

    rows = [
        {
            "name": name,
            "path": str(each.vault),
            "cache": shown_url(each.db_url),
            "default": name == settings.vault_name,
        }
        for name, each in vault_settings(settings).items()
    ]
    if args.json:
        print(json.dumps({"vaults": rows}))
        return 0
    width = max(len(str(row["name"])) for row in rows)
    for row in rows:
        mark = "*" if row["default"] else " "
        print(f"{mark} {row['name']:<{width}}  {row['path']}  (cache: {row['cache']})")
    return 0


def vault_settings(settings: Settings) -> dict[str, Settings]:
    """Each vault's own settings, by name (one vault: its name is `default`)."""
    if not settings.vaults:
        return {settings.vault_name: settings}
    return {
        name: settings if name == settings.vault_name else settings.for_vault(name)
        for name in settings.vaults
    }
