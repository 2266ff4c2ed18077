"""The built wheel carries the dashboard: its package, templates and every static asset
(Cytoscape.js with its license), so an installed Weaver serves it offline."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "weaver" / "dashboard"


@pytest.mark.slow
def test_the_wheel_holds_the_templates_and_static_assets(tmp_path: Path) -> None:
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
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("weaver_mcp-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {
        f"weaver/dashboard/{path.relative_to(SHIPPED).as_posix()}"
        for path in SHIPPED.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert {"weaver/dashboard/static/vendor/cytoscape.min.js"} <= wanted
    assert {"weaver/dashboard/static/vendor/cytoscape.LICENSE.txt"} <= wanted
    assert {"weaver/dashboard/templates/overview.html", "weaver/dashboard/site.py"} <= wanted
    assert wanted - names == set()
