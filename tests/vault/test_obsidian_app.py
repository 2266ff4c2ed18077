"""The vaults the Obsidian app knows, from its obsidian.json on each platform, with a fake home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from weaver.config import no_vault_message
from weaver.obsidian_app import KnownVault, config_files, list_known_vaults


def write_registry(folder: Path, vaults: dict[str, object]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "obsidian.json").write_text(json.dumps({"vaults": vaults}), encoding="utf-8")


@pytest.fixture
def folders(tmp_path: Path) -> list[Path]:
    made = [tmp_path / name for name in ("Work", "Old", "Open")]
    for folder in made:
        folder.mkdir()
    return made


def test_linux_reads_xdg_config_home_first(tmp_path: Path, folders: list[Path]) -> None:
    work, old, opened = folders
    write_registry(
        tmp_path / "xdg" / "obsidian",
        {
            "1": {"path": str(old), "ts": 10},
            "2": {"path": str(work), "ts": 30},
            "3": {"path": str(opened), "ts": 20, "open": True},
            "4": {"path": str(tmp_path / "deleted"), "ts": 40},
        },
    )
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    # Open first, then the most recently used; a folder that is gone is left out.
    assert list_known_vaults(env, "linux") == [
        KnownVault(opened, 20, True),
        KnownVault(work, 30, False),
        KnownVault(old, 10, False),
    ]


@pytest.mark.parametrize(
    ("platform", "where"),
    [
        ("linux", ".config/obsidian"),
        ("linux", ".var/app/md.obsidian.Obsidian/config/obsidian"),
        ("darwin", "Library/Application Support/obsidian"),
        ("win32", "AppData/Roaming/obsidian"),
    ],
)
def test_each_platform_s_config_folder(
    tmp_path: Path, folders: list[Path], platform: str, where: str
) -> None:
    home = tmp_path / "home"
    write_registry(home / where, {"a": {"path": str(folders[0]), "ts": 1}})
    assert list_known_vaults({"HOME": str(home)}, platform) == [KnownVault(folders[0], 1, False)]


def test_windows_uses_appdata(tmp_path: Path, folders: list[Path]) -> None:
    appdata = tmp_path / "Roaming"
    write_registry(appdata / "obsidian", {"a": {"path": str(folders[1])}})
    env = {"HOME": str(tmp_path / "home"), "APPDATA": str(appdata)}
    assert config_files(env, "win32")[0] == appdata / "obsidian" / "obsidian.json"
    assert list_known_vaults(env, "win32") == [KnownVault(folders[1], 0, False)]


@pytest.mark.parametrize(
    "content",
    ["", "{not json", "[]", '{"vaults": []}', '{"vaults": {"a": {"path": 3}, "b": "x"}}', "\xff"],
)
def test_a_broken_file_means_no_known_vaults(tmp_path: Path, content: str) -> None:
    folder = tmp_path / ".config" / "obsidian"
    folder.mkdir(parents=True)
    (folder / "obsidian.json").write_bytes(content.encode("latin-1"))
    assert list_known_vaults({"HOME": str(tmp_path)}, "linux") == []


def test_the_message_without_known_vaults_still_says_how(tmp_path: Path) -> None:
    message = no_vault_message({"HOME": str(tmp_path)}, "linux")
    assert message.splitlines() == [
        "no vault configured.",
        "Name the vault in one of these ways:",
        "  weaver --vault PATH index    (one command)",
        "  export WEAVER_VAULT=PATH    (this shell)",
        "  vault = 'PATH'    (a config file: --config FILE or WEAVER_CONFIG)",
    ]
