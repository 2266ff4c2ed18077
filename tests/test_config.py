"""Settings: precedence (defaults < file < environment < flags) and one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from weaver.cli import main
from weaver.config import load_settings
from weaver.errors import ConfigError


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_put_the_cache_inside_the_vault(vault_dir: Path) -> None:
    settings = load_settings(overrides={"vault": vault_dir}, environ={})
    assert settings.db_url == f"sqlite:///{vault_dir / '.weaver' / 'cache.db'}"
    assert settings.debounce_ms == 50
    assert settings.http_host == "127.0.0.1"


def test_file_paths_are_relative_to_the_file(tmp_path: Path, vault_dir: Path) -> None:
    config = write_config(tmp_path / "weaver.toml", 'vault = "vault"\ndebounce_ms = 20\n')
    settings = load_settings(config_path=config, environ={})
    assert settings.vault == vault_dir
    assert settings.debounce_ms == 20


def test_environment_beats_file_and_flags_beat_environment(tmp_path: Path, vault_dir: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    config = write_config(tmp_path / "weaver.toml", 'vault = "vault"\nhttp_port = 1000\n')
    env = {"WEAVER_HTTP_PORT": "2000", "WEAVER_VAULT": str(other), "WEAVER_IGNORE": "a/*,b"}
    from_env = load_settings(config_path=config, environ=env)
    assert (from_env.http_port, from_env.vault, from_env.ignore) == (2000, other, ["a/*", "b"])
    from_flags = load_settings(config_path=config, overrides={"vault": vault_dir}, environ=env)
    assert from_flags.vault == vault_dir


def test_config_named_by_environment_is_used(tmp_path: Path, vault_dir: Path) -> None:
    config = write_config(tmp_path / "custom.toml", f'vault = "{vault_dir}"\nread_only = true\n')
    assert load_settings(environ={"WEAVER_CONFIG": str(config)}).read_only is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('vault = "vault"\nfrobnicate = 1\n', "unknown setting 'frobnicate'"),
        ('vault = "vault"\ndebounce_ms = "soon"\n', "invalid setting 'debounce_ms'"),
        ('vault = "vault"\nhttp_port = [\n', "is not valid TOML"),
        ('vault = "nowhere"\n', "vault not found"),
    ],
)
def test_bad_config_is_a_one_line_error(
    tmp_path: Path, vault_dir: Path, text: str, message: str
) -> None:
    config = write_config(tmp_path / "weaver.toml", text)
    with pytest.raises(ConfigError, match=message):
        load_settings(config_path=config, environ={})


def test_unreadable_config_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read config file .*missing\.toml"):
        load_settings(config_path=tmp_path / "missing.toml", environ={})


def test_no_vault_anywhere_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="no vault configured"):
        load_settings(environ={})


def test_cli_reports_config_errors_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--vault", str(tmp_path / "absent"), "index"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == f"weaver: vault not found: {tmp_path / 'absent'}"
    assert "Traceback" not in err


def test_common_options_go_before_or_after_the_command(
    tmp_path: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (vault_dir / "a.md").write_text("a", encoding="utf-8")
    assert main(["index", "--vault", str(vault_dir), "--json"]) == 0
    assert '"added": 1' in capsys.readouterr().out
    # After the command wins over before it; before it still counts when nothing follows.
    assert main(["--vault", str(tmp_path / "absent"), "index", "--vault", str(vault_dir)]) == 0
    assert main(["--vault", str(vault_dir), "index", "--log-level", "warning", "--json"]) == 0
    assert '"unchanged": 1' in capsys.readouterr().out
    assert main(["index", "--vault", str(tmp_path / "absent")]) == 2
    assert "vault not found" in capsys.readouterr().err


def test_an_invalid_value_is_blamed_on_where_it_came_from(tmp_path: Path, vault_dir: Path) -> None:
    config = write_config(tmp_path / "weaver.toml", 'vault = "vault"\nindex_workers = 1\n')
    bad_env = {"WEAVER_INDEX_WORKERS": "-1"}
    below_zero = r"'index_workers' in WEAVER_INDEX_WORKERS: .*greater than or equal to 0"
    with pytest.raises(ConfigError, match=below_zero):
        load_settings(config_path=config, environ=bad_env)
    with pytest.raises(ConfigError, match=r"'log_level' on the command line"):
        load_settings(config_path=config, overrides={"log_level": "loud"}, environ={})
    config.write_text('vault = "vault"\nindex_workers = "many"\n')
    with pytest.raises(ConfigError, match=rf"'index_workers' in {re.escape(str(config))}"):
        load_settings(config_path=config, environ={})


def test_a_reader_with_a_database_url_needs_no_vault_folder(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    url = f"sqlite:///{tmp_path / 'cache.db'}"
    overrides = {"vault": absent, "database_url": url}
    settings = load_settings(overrides=overrides, environ={}, vault_here=False)
    assert settings.vault == absent and settings.database_url == url
    with pytest.raises(ConfigError, match="vault not found"):  # its cache would be in the vault
        load_settings(overrides={"vault": absent}, environ={}, vault_here=False)
