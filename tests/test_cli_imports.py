"""What a `weaver` process imports before it does anything: every command pays for the imports
of the command line at its start (the tests start hundreds), so the parser and `--help` stay
light and each command imports what it needs when it runs. Checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import clean_env

# The heavy libraries no parser needs: the cache's, the semantic model's and the servers'.
HEAVY = ("sqlalchemy", "numpy", "mcp", "uvicorn", "starlette")
# What `weaver --help` needs none of either: the logging, the rendering, the settings model.
SETTINGS = ("structlog", "rich", "weaver.log", "pydantic", "weaver.config")


def imported_after(code: str, cwd: Path) -> set[str]:
    """The top-level names of the modules loaded once `code` ran in a new interpreter (a
    submodule counts by its full name too)."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        """
        import json, sys
        print(json.dumps(sorted(sys.modules)))
        """
    )
    env = clean_env()
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert done.returncode == 0, done.stderr
    names: list[str] = json.loads(done.stdout.splitlines()[-1])
    return set(names) | {name.partition(".")[0] for name in names}


def test_importing_the_command_line_imports_no_heavy_library(tmp_path: Path) -> None:
    loaded = imported_after("import weaver.cli", tmp_path)
    assert "weaver.cli" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_help_imports_neither_the_logging_nor_the_rendering(tmp_path: Path) -> None:
    code = """
        import contextlib, io
        from weaver.cli import main
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:
            main(["--help"])
        assert "weaver mcp-config" in out.getvalue(), out.getvalue()
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:
            main(["serve", "--help"])
        assert "--transport {stdio,http}" in out.getvalue(), out.getvalue()
    """
    loaded = imported_after(code, tmp_path)
    assert loaded.isdisjoint(HEAVY + SETTINGS), sorted(loaded & {*HEAVY, *SETTINGS})


def test_settings_checks_leave_the_workflow_engine_to_the_commands_that_run_it(
    tmp_path: Path,
) -> None:
    """`weaver index` and `weaver serve` check their settings before starting; with no
    `[workflows.<id>]` table there is nothing for the engine to check, so it is not imported."""
    vault = tmp_path / "vault"
    vault.mkdir()
    code = f"""
        from weaver.config import load_settings
        from weaver.runtime.settings_checks import SETTINGS_CHECKS
        load_settings(overrides={{"vault": {str(vault)!r}}}, checks=SETTINGS_CHECKS)
    """
    assert "weaver.engine" not in imported_after(code, tmp_path)


# What `weaver serve` needs none of to answer `initialize` and `tools/list` (issue 39): numpy
# (the link graph's ranks, the vectors: imported by the functions that compute), the semantic
# model's runtime, the dashboard's pages (an HTTP server with OAuth imports them), PostgreSQL's
# driver. uvicorn is not among them: the SDK's server imports it for every transport.
NOT_TO_SERVE = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "weaver.dashboard",
    "jinja2",
    "markdown_it",
    "psycopg",
)


def test_serve_lists_its_tools_without_the_libraries_no_answer_needs_yet(tmp_path: Path) -> None:
    """`weaver serve` as the command line runs it, up to the point where it would read its
    first request: the server built, its engine started, its tools listed."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Home.md").write_text("# Home\n[[Other]] #start\n", encoding="utf-8")
    code = f"""
        import anyio
        import weaver.host.serve as serve

        async def list_instead_of_serving(server, stop, beside=None):
            assert any(tool.name == "query_files" for tool in await server.list_tools())

        serve.serve_stdio = list_instead_of_serving
        from weaver.cli import main
        assert main(["--vault", {str(vault)!r}, "--log-level", "warning", "serve"]) == 0
    """
    loaded = imported_after(code, tmp_path)
    assert "weaver.mcp_server.server" in loaded
    assert loaded.isdisjoint(NOT_TO_SERVE), sorted(loaded & set(NOT_TO_SERVE))
