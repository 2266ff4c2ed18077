"""The built wheel carries what an installed Weaver reads as files: the dashboard's templates and
static assets (Cytoscape.js with its license), so that it serves them offline, and the folders
pyproject.toml maps into the package (alembic/ as weaver/migrations, workflows/ as
weaver/builtin_workflows), so that it migrates its cache and runs its built-in workflows."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.package_layout import mapped_folders

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "weaver" / "dashboard"


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",  # the venv's setuptools: no download at test time
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = out.glob("weaver_mcp-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def shipped_files(folder: Path, as_package: str) -> set[str]:
    """The wheel's names for the files of `folder`, installed as the package `as_package`."""
    prefix = as_package.replace(".", "/")
    return {
        f"{prefix}/{path.relative_to(folder).as_posix()}"
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".md"
    }


@pytest.mark.slow
def test_the_wheel_holds_the_templates_and_static_assets(wheel_names: set[str]) -> None:
    wanted = shipped_files(DASHBOARD, "weaver.dashboard")
    assert {"weaver/dashboard/static/vendor/cytoscape.min.js"} <= wanted
    assert {"weaver/dashboard/static/vendor/cytoscape.LICENSE.txt"} <= wanted
    assert {"weaver/dashboard/templates/overview.html", "weaver/dashboard/site.py"} <= wanted
    assert wanted - wheel_names == set()


@pytest.mark.slow
def test_the_wheel_installs_the_mapped_folders_inside_the_package(wheel_names: set[str]) -> None:
    for package, folder in mapped_folders().items():
        wanted = shipped_files(folder, package)
        assert wanted - wheel_names == set(), package
    assert {"weaver/migrations/env.py", "weaver/migrations/script.py.mako"} <= wheel_names
    assert "weaver/builtin_workflows/daily_digest.py" in wheel_names
    # Under their own names they would be top-level packages of every user's environment.
    assert not any(name.startswith(("alembic/", "workflows/")) for name in wheel_names)
