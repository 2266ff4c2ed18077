"""Settings: precedence (defaults < file < environment < flags) and one-line errors."""

from __future__ import annotations

import os
import re
import sys
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
        ('vault = "nowhere"\n', r"'vault' in .*weaver\.toml: '.*nowhere': not found; expected"),
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
    assert err.strip() == (
        f"weaver: invalid setting 'vault' on the command line: '{tmp_path / 'absent'}': "
        "not found; expected the folder of notes"
    )
    assert "Traceback" not in err
    note = tmp_path / "Note.md"
    note.write_text("# A note, not a vault\n", encoding="utf-8")
    assert main(["--vault", str(note), "index"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"weaver: invalid setting 'vault' on the command line: '{note}' is a file, not a folder; "
        "expected the folder of notes"
    )


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
    assert "'vault' on the command line" in capsys.readouterr().err


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
    with pytest.raises(ConfigError, match=r"'vault'.*: not found"):  # its cache would be in it
        load_settings(overrides={"vault": absent}, environ={}, vault_here=False)


# -- every bad value refused before anything runs: one line, exit 2, nothing made on disk ------


def tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No WEAVER_* setting from the shell the tests run in; the working directory is tmp_path
    (so no ./config/weaver.toml is found, and anything made relative to it would show)."""
    for name in [n for n in os.environ if n.startswith("WEAVER_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


REFUSED = [
    # (config file lines, environment, arguments, the line on stderr after "weaver: ")
    (
        "",
        {},
        ["--db", "garbage", "index"],
        "invalid setting 'database_url' on the command line: 'garbage': not a database URL; "
        "expected sqlite:///PATH or postgresql+psycopg://USER@HOST/DB",
    ),
    (
        "",
        {"WEAVER_DATABASE_URL": "mysql://weaver:secret@db/notes"},
        ["index"],
        "invalid setting 'database_url' in WEAVER_DATABASE_URL: 'mysql://weaver:***@db/notes': "
        "not a database Weaver can use; expected sqlite:///PATH or postgresql+psycopg://",
    ),
    (
        "database_url = 'sqlite:///{tmp}/missing/dir/cache.db'",
        {},
        ["index"],
        "invalid setting 'database_url' in {config}: 'sqlite:///{tmp}/missing/dir/cache.db': "
        "no folder {tmp}/missing/dir; create it, or name a file in a folder that exists",
    ),
    (
        "workflow_dirs = ['plugins-gone']",
        {},
        ["workflows"],
        "invalid setting 'workflow_dirs' in {config}: '{tmp}/plugins-gone': not found; "
        "expected a folder of workflow plugins",
    ),
    (
        "[workflows.proof-daily-digest]\nschedule = '61 7 * * *'",
        {},
        ["trigger", "proof-daily-digest"],
        "invalid setting 'workflows.proof-daily-digest.schedule' in {config}: '61 7 * * *': "
        "invalid cron '61 7 * * *': ",
    ),
    (
        "[workflows.proof-daily-digest]\ntimezone = 'Mars/Olympus'",
        {},
        ["daemon"],
        "invalid setting 'workflows.proof-daily-digest.timezone' in {config}: 'Mars/Olympus': "
        "unknown time zone 'Mars/Olympus'",
    ),
    (
        "[workflows.proof-daily-digest]\ntimezone = 'Mars/Olympus'",
        {},
        ["serve"],  # checked by the command, after its tool manifest (there is none here)
        "invalid setting 'workflows.proof-daily-digest.timezone' in {config}: 'Mars/Olympus': "
        "unknown time zone 'Mars/Olympus'",
    ),
    (
        "",
        {"WEAVER_HTTP_PORT": "70000"},
        ["daemon"],
        "invalid setting 'http_port' in WEAVER_HTTP_PORT: '70000': "
        "Input should be less than or equal to 65535",
    ),
    (
        "",
        {},
        ["serve", "--transport", "http", "--port", "99999"],
        "invalid --port: 99999: Input should be less than or equal to 65535",
    ),
    (
        "http_host = 'my laptop'",
        {},
        ["serve", "--transport", "http"],
        "invalid setting 'http_host' in {config}: 'my laptop': expected an IP address or a host "
        "name",
    ),
    (
        "",
        {"WEAVER_WORKER_STALLED_S": "2"},
        ["index"],
        "invalid setting 'worker_stalled_s' in WEAVER_WORKER_STALLED_S: 2.0: "
        "expected more than worker_heartbeat_s (5)",
    ),
    (
        "embedding_model = 'bge-small'",
        {},
        ["index"],
        "invalid setting 'embedding_model' in {config}: 'bge-small': expected "
        "'all-MiniLM-L6-v2-static' or 'all-MiniLM-L6-v2-int8'",
    ),
    (
        "",
        {"WEAVER_EMBEDDING_MODEL_PATH": "models/mine.onnx"},
        ["index"],
        "invalid setting 'embedding_model_path' in WEAVER_EMBEDDING_MODEL_PATH: "
        "'{tmp}/models/mine.onnx': no such file; expected an ONNX model file",
    ),
    (
        "",
        {"WEAVER_IGNORE": '["drafts/*"'},
        ["index"],
        "invalid setting 'ignore' in WEAVER_IGNORE: '[\"drafts/*\"': "
        "expected a JSON list of strings, or values separated by commas",
    ),
    (
        "",
        {"WEAVER_HTTP_HOST": "0.0.0.0"},
        ["daemon"],
        "refusing to serve HTTP on 0.0.0.0 without a bearer token",
    ),
]


REFUSED_IDS = [
    "url-garbage",
    "url-mysql",
    "sqlite-folder-missing",
    "workflow-dir-missing",
    "config-cron",
    "config-timezone",
    "config-timezone-serve",
    "port-env",
    "port-flag",
    "host",
    "worker-timing",
    "embedding-model",
    "embedding-model-path",
    "env-list-json",
    "http-without-token",
]


@pytest.mark.parametrize(("lines", "env", "args", "message"), REFUSED, ids=REFUSED_IDS)
def test_a_bad_setting_is_refused_before_anything_runs(
    clean_env: pytest.MonkeyPatch,
    tmp_path: Path,
    vault_dir: Path,
    capsys: pytest.CaptureFixture[str],
    lines: str,
    env: dict[str, str],
    args: list[str],
    message: str,
) -> None:
    """From the config file, a WEAVER_* variable or a flag alike: exit 2, one line naming the
    setting, its value and what was expected, and no file or folder made (no `.weaver/` in the
    vault, no parent folder of a SQLite file)."""
    config = write_config(
        tmp_path / "weaver.toml", f"vault = 'vault'\n{lines}\n".format(tmp=tmp_path)
    )
    for name, value in env.items():
        clean_env.setenv(name, value)
    before = tree(tmp_path)
    code = main(["--config", str(config), "--log-level", "error", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(
        "weaver: " + message.format(tmp=tmp_path, config=config)
    ), err
    assert tree(tmp_path) == before


def test_postgresql_without_the_extra_says_what_to_install(
    clean_env: pytest.MonkeyPatch, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.setitem(
        sys.modules, "psycopg", None
    )  # as if `weaver-mcp[postgres]` was not installed
    url = "postgresql+psycopg://weaver:secret@db.example/notes"
    before = tree(vault_dir)
    assert main(["--vault", str(vault_dir), "--db", url, "index"]) == 2
    assert capsys.readouterr().err == (
        "weaver: invalid setting 'database_url' on the command line: "
        "'postgresql+psycopg://weaver:***@db.example/notes': PostgreSQL support is not installed "
        "(no psycopg module): pip install 'weaver-mcp[postgres]'\n"
    )
    assert tree(vault_dir) == before


def test_worker_concurrency_is_checked_like_its_setting(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'cache.db'}"
    assert main(["--vault", str(tmp_path), "--db", url, "worker", "--concurrency", "0"]) == 2
    assert capsys.readouterr().err == (
        "weaver: invalid --concurrency: 0: Input should be greater than or equal to 1\n"
    )
    assert not (tmp_path / "cache.db").exists()


BAD_CRON_PLUGIN = """
from weaver.engine import OnSchedule, workflow

@workflow(id="nightly", triggers=[OnSchedule("0 25 * * *")])
def nightly(ctx):
    return None
"""


def test_a_plugin_with_a_bad_cron_is_named_when_its_workflow_is_asked_for(
    clean_env: pytest.MonkeyPatch,
    tmp_path: Path,
    vault_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A plugin is someone's code, not a setting: it is skipped (the other workflows still
    run) and listed as broken, and a request for its workflow says which plugin failed."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "nightly.py").write_text(BAD_CRON_PLUGIN, encoding="utf-8")
    clean_env.setenv("WEAVER_WORKFLOW_DIRS", str(plugins))
    base = ["--vault", str(vault_dir), "--log-level", "error"]
    assert main([*base, "workflows"]) == 0
    assert f"failed to load: {plugins / 'nightly.py'}: WorkflowDefinitionError: invalid cron" in (
        capsys.readouterr().out
    )
    assert main([*base, "trigger", "nightly"]) == 2
    logged, answer = capsys.readouterr().err.splitlines()
    assert '"event": "workflow plugin skipped"' in logged  # at error level: shown with any
    assert answer == (
        "weaver: Workflow not found: 'nightly'; these failed to load (the workflow list says "
        f"why): {plugins / 'nightly.py'}"
    )


def test_several_http_processes_are_refused_on_windows(
    monkeypatch: pytest.MonkeyPatch, vault_dir: Path
) -> None:
    """Reader processes inherit the listening socket by descriptor, which Windows lacks: the
    setting is refused before anything starts, saying why, rather than failing at spawn."""
    env = {"WEAVER_VAULT": str(vault_dir), "WEAVER_HTTP_PROCESSES": "3"}
    assert load_settings(environ=env).http_processes == 3
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(ConfigError, match=r"'http_processes' in WEAVER_HTTP_PROCESSES: .*use 1"):
        load_settings(environ=env)
