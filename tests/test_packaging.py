"""What the wheel ships and needs: every package folder is listed for setuptools, every library
the code imports is a declared dependency, and the bundled demo vault reads without errors.

The wheel itself is built and used outside the checkout by `.ci/run` (tests/install_check.py)."""

from __future__ import annotations

import ast
import os
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from weaver.config import Settings
from weaver.runtime.app import open_app

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_folders() -> set[str]:
    """Every folder below weaver/ that holds Python modules, as a dotted package name (the
    symlinked weaver/migrations and weaver/builtin_workflows included)."""
    found = set()
    for folder, _dirs, files in os.walk(ROOT / "weaver", followlinks=True):
        if any(name.endswith(".py") for name in files):
            found.add(".".join(Path(folder).relative_to(ROOT).parts))
    return found


def test_every_package_folder_is_listed_for_setuptools() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert package_folders() <= listed
    # The rest are folders of data files (the dashboard's templates and assets).
    for package in listed - package_folders():
        assert (ROOT.joinpath(*package.split("."))).is_dir(), package


def test_migrations_and_built_in_workflows_are_subpackages() -> None:
    assert (ROOT / "weaver" / "migrations").resolve() == ROOT / "alembic"
    assert (ROOT / "weaver" / "builtin_workflows").resolve() == ROOT / "workflows"


def imported_top_levels(folder: Path) -> set[str]:
    names: set[str] = set()
    for module in folder.rglob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_every_imported_library_is_a_declared_dependency() -> None:
    third_party = imported_top_levels(ROOT / "weaver") - set(sys.stdlib_module_names) - {"weaver"}
    declared = {
        canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]
    }
    for extra in PYPROJECT["project"].get("optional-dependencies", {}).values():
        declared |= {canonicalize_name(Requirement(r).name) for r in extra}
    providers = packages_distributions()
    undeclared = {
        name
        for name in third_party
        if not {canonicalize_name(d) for d in providers.get(name, [name])} & declared
    }
    assert undeclared == set()


def test_the_demo_vault_reads_without_errors(tmp_path: Path) -> None:
    """A new user's first `make daemon` reads this vault: no note may fail to parse there."""
    settings = Settings(vault=ROOT / "demo-vault", database_url=f"sqlite:///{tmp_path}/c.db")
    app = open_app(settings)
    try:
        report = app.indexer.reconcile()
    finally:
        app.close()
    assert report.added > 20
    assert report.errors == 0
