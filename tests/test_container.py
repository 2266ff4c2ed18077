"""The container image (Dockerfile) and docker-compose.yml, read as files: no Docker engine runs
on the machines this suite runs on, so the image itself is never built here. What can be checked
without one is: the image runs as a user that is not root, keeps the vault as a volume, and its
health check is a command that really tells a healthy server from a missing one; every role of
the compose file runs that image."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import free_port
from tests.mcp_server.test_transports import http_server

ROOT = Path(__file__).resolve().parents[1]


def final_stage() -> dict[str, list[str]]:
    """The last stage's instructions: name -> the arguments of each (continuations joined)."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    stages: list[dict[str, list[str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, args = line.partition(" ")
        if name.upper() == "FROM":
            stages.append({})
        stages[-1].setdefault(name.upper(), []).append(args.strip())
    return stages[-1]


def health_command() -> list[str]:
    (healthcheck,) = final_stage()["HEALTHCHECK"]
    command = healthcheck[healthcheck.index("CMD ") + 4 :]
    parsed = json.loads(command)
    assert isinstance(parsed, list)
    return [str(part) for part in parsed]


def test_the_image_runs_as_a_user_that_is_not_root() -> None:
    stage = final_stage()
    (user,) = stage["USER"]
    assert user not in {"root", "0"} and not user.startswith("0:")
    assert any("useradd" in run and user in run for run in stage["RUN"])


def test_the_vault_is_a_volume_and_the_default_command_is_the_daemon() -> None:
    stage = final_stage()
    assert json.loads(stage["VOLUME"][0]) == ["/vault"]
    assert "WEAVER_VAULT=/vault" in " ".join(stage["ENV"])
    assert json.loads(stage["CMD"][0]) == ["weaver", "daemon"]
    assert stage["EXPOSE"] == ["8765"]


@pytest.mark.slow
def test_the_health_check_passes_on_a_serving_weaver_and_fails_without_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "a.md").write_text("# A\n", encoding="utf-8")
    python, *args = health_command()
    assert python == "python"
    with http_server(tmp_path / "vault", tmp_path / "log") as base:
        port = base.rsplit(":", 1)[1]
        healthy = subprocess.run(
            [sys.executable, *args],
            env={**os.environ, "WEAVER_HTTP_PORT": port},
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert healthy.returncode == 0, healthy.stderr
    nobody = subprocess.run(
        [sys.executable, *args],
        env={**os.environ, "WEAVER_HTTP_PORT": str(free_port())},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert nobody.returncode != 0
    assert b"Connection refused" in nobody.stderr


def test_every_weaver_role_in_compose_runs_the_image_built_here() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    roles = {name: s for name, s in compose["services"].items() if name != "postgres"}
    assert set(roles) >= {"writer", "reader1", "reader2", "worker1", "worker2"}
    for name, service in roles.items():
        assert service["build"] == ".", name
        assert service["image"] == "weaver-mcp:local", name
        command = shlex.join(service["command"])
        serves_http = "serve" in command and "--transport http" in command
        # The image's check asks the HTTP port; a role without one turns it off.
        assert service.get("healthcheck", {}).get("disable", False) is not serves_http, name
        if not serves_http:
            assert "--no-http" in command or command.startswith("weaver worker"), name


def test_the_build_context_leaves_local_state_out() -> None:
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".git", ".venv", "demo-vault/.weaver"} <= set(ignored)
