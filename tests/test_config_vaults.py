"""Several named vaults in the settings: `[vaults.NAME]` tables and `default_vault`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from weaver.cli import main
from weaver.config import load_settings
from weaver.errors import ConfigError


def two_vaults(tmp_path: Path, extra: str = "") -> Path:
    for name in ("work", "home"):
        (tmp_path / name).mkdir()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'{extra}\n[vaults.work]\npath = "work"\n\n[vaults.home]\npath = "home"\n',
        encoding="utf-8",
    )
    return config


def test_the_first_vault_is_the_default_and_each_keeps_its_own_cache(tmp_path: Path) -> None:
    settings = load_settings(two_vaults(tmp_path), environ={})
    assert settings.several_vaults and settings.vault_name == "work"
    assert settings.vault == (tmp_path / "work").resolve()
    home = settings.for_vault("home")
    assert home.vault == (tmp_path / "home").resolve()
    assert home.db_url.endswith("home/.weaver/cache.db")
    assert settings.db_url.endswith("work/.weaver/cache.db")
    assert not home.several_vaults


def test_default_vault_names_the_default(tmp_path: Path) -> None:
    settings = load_settings(two_vaults(tmp_path, 'default_vault = "home"'), environ={})
    assert settings.vault_name == "home"
    assert settings.vault == (tmp_path / "home").resolve()


def test_an_unknown_default_vault_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'hom' is not a vault \(did you mean 'home'\?; the "):
        load_settings(two_vaults(tmp_path, 'default_vault = "hom"'), environ={})


def test_vault_and_vaults_in_one_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"either `vault` \(one vault\) or \[vaults.NAME\]"):
        load_settings(two_vaults(tmp_path, 'vault = "work"'), environ={})


def test_a_vault_flag_serves_that_vault_alone(tmp_path: Path) -> None:
    config = two_vaults(tmp_path)
    settings = load_settings(config, {"vault": tmp_path / "home"}, environ={})
    assert not settings.vaults and settings.vault == (tmp_path / "home").resolve()


def test_a_missing_vault_folder_is_named(tmp_path: Path) -> None:
    config = two_vaults(tmp_path)
    (tmp_path / "home").rmdir()
    with pytest.raises(ConfigError, match=r"'vaults.home.path' .*not found; expected a vault"):
        load_settings(config, environ={})


def test_a_bad_vault_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    config = tmp_path / "weaver.toml"
    config.write_text('[vaults."a b"]\npath = "v"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="'a b' is not a vault name"):
        load_settings(config, environ={})


def test_a_shared_database_url_is_refused(tmp_path: Path) -> None:
    config = two_vaults(tmp_path, 'database_url = "sqlite:///x.db"')
    with pytest.raises(ConfigError, match="give each vault its own database_url"):
        load_settings(config, environ={})


def test_a_vaults_own_bad_database_url_is_refused_as_the_single_vaults_is(
    tmp_path: Path,
) -> None:
    for name in ("work", "home"):
        (tmp_path / name).mkdir()
    config = tmp_path / "weaver.toml"
    config.write_text(
        '[vaults.work]\npath = "work"\n\n[vaults.home]\npath = "home"\n'
        'database_url = "mysql://somewhere/notes"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="mysql"):
        load_settings(config, environ={})


def test_a_single_vault_table_is_one_vault(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    config = tmp_path / "weaver.toml"
    config.write_text('[vaults.notes]\npath = "notes"\n', encoding="utf-8")
    settings = load_settings(config, environ={})
    assert not settings.several_vaults and settings.vault_name == "notes"
    assert settings.vault == (tmp_path / "notes").resolve()


def test_weaver_vaults_lists_them_marking_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = two_vaults(tmp_path, 'default_vault = "home"')
    assert main(["--config", str(config), "vaults", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["vaults"]
    assert [(v["name"], v["default"]) for v in listed] == [("work", False), ("home", True)]
    assert listed[1]["cache"] == f"sqlite:///{(tmp_path / 'home').resolve()}/.weaver/cache.db"
    assert main(["--config", str(config), "vaults"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("* home  ") and lines[0].startswith("  work  ")
