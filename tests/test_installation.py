"""How Weaver was installed, told from the environment's marks: the hints name the installer's
own command, and `weaver mcp-config` under uvx names uvx rather than a path in uv's cache."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.helpers import clean_env
from weaver.installation import (
    Installer,
    detect_installer,
    extra_command,
    extra_requirements,
)

REPO = Path(__file__).resolve().parents[1]


def environment(root: Path, marks: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in marks.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("where", "marks", "installer", "kind"),
    [
        ("uv/archive-v0/AbC123", {}, "uv", "uvx"),  # uv's cache root holds CACHEDIR.TAG
        ("uv/tools/weaver-mcp", {"uv-receipt.toml": "[tool]\n"}, "uv", "uv-tool"),
        ("pipx/venvs/weaver-mcp", {"pipx_metadata.json": "{}"}, "pip", "pipx"),
        ("project/.venv", {}, "uv\n", "uv"),
        ("project/.venv", {}, "pip\n", "pip"),
        ("project/.venv", {}, "", "pip"),
    ],
)
def test_the_installer_is_told_by_its_marks(
    tmp_path: Path, where: str, marks: dict[str, str], installer: str, kind: Installer
) -> None:
    if kind == "uvx":
        environment(
            tmp_path / "uv", {"CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55"}
        )
    prefix = environment(tmp_path / where, marks)
    assert detect_installer(prefix, installer) == kind


def test_each_installer_gets_its_own_command_for_an_extra() -> None:
    assert extra_command("semantic", "pip") == "pip install 'weaver-mcp[semantic]'"
    assert extra_command("semantic", "uv") == "uv pip install 'weaver-mcp[semantic]'"
    assert extra_command("semantic", "uv-tool") == "uv tool install 'weaver-mcp[semantic]'"
    assert extra_command("semantic", "uvx").startswith(
        "uvx --from 'weaver-mcp[semantic]' weaver-mcp"
    )
    injected = shlex.split(extra_command("semantic", "pipx"))
    assert injected[:3] == ["pipx", "inject", "weaver-mcp"]
    # The extra's requirements as the installed metadata lists them, not a copy of them.
    assert injected[3:] == extra_requirements("semantic")
    assert any(r.startswith("onnxruntime") for r in injected[3:])


@pytest.mark.slow
def test_mcp_config_under_uvx_names_uvx_not_the_cache(tmp_path: Path, vault_dir: Path) -> None:
    """A Python whose environment sits in a uv cache, as uvx runs Weaver: the entry must
    survive `uv cache clean`, so it starts `uvx weaver-mcp`, never a path inside the cache."""
    cache = environment(tmp_path / "uv-cache", {"CACHEDIR.TAG": "Signature: 8a477f59"})
    env_dir = cache / "archive-v0" / "x1"
    venv.create(env_dir, with_pip=False)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # This environment's packages, seen from the one in the cache.
    site = next(p for p in sys.path if p.endswith("site-packages"))
    env = clean_env()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), site])
    env["PATH"] = str(tmp_path)  # no uvx on PATH: the entry says `uvx`, found by the client
    done = subprocess.run(
        [str(python), "-m", "weaver", "--vault", str(vault_dir), "mcp-config"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["weaver"]
    assert entry["command"] == "uvx"
    assert entry["args"][-4:] == ["weaver-mcp", "--vault", str(vault_dir), "serve"]
    assert str(cache) not in done.stdout


def test_the_semantic_hint_speaks_the_installer_s_language(monkeypatch: pytest.MonkeyPatch) -> None:
    from weaver import installation
    from weaver.semantic.model import enable_hint

    monkeypatch.setattr(installation, "this_installer", lambda: "pipx")
    assert enable_hint().startswith("install the extra: pipx inject weaver-mcp 'onnxruntime")
    monkeypatch.setattr(installation, "this_installer", lambda: "uv-tool")
    assert enable_hint() == "install the extra: uv tool install 'weaver-mcp[semantic]'"
