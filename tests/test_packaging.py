"""What the wheel ships and needs: every package folder is listed for setuptools, every library
the code imports is a declared dependency, and the bundled demo vault reads without errors.

The wheel itself is built and used outside the checkout by `.ci/run` (tests/install_check.py)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.package_layout import package_modules
from weaver.config import Settings
from weaver.runtime.app import open_app

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_folders() -> set[str]:
    """Every package of the installed `weaver` that holds Python modules, as a dotted name (the
    folders mapped in by `package-dir` included)."""
    return {
        module if path.name == "__init__.py" else module.rpartition(".")[0]
        for module, path in package_modules().items()
    }


def test_every_package_folder_is_listed_for_setuptools() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert {"weaver.migrations", "weaver.builtin_workflows"} <= package_folders()
    assert package_folders() <= listed
    # The rest are folders of data files (the dashboard's templates and assets).
    for package in listed - package_folders():
        assert (ROOT.joinpath(*package.split("."))).is_dir(), package


def test_the_repository_holds_no_symlink() -> None:
    """A Windows checkout makes a symlink into a text file holding its target (unless the user
    enabled them), which broke a source or editable install there: pyproject.toml maps
    alembic/ and workflows/ into the package instead."""
    listing = subprocess.run(
        ["git", "ls-files", "--stage"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listing.returncode != 0:
        pytest.skip(f"not a git checkout: {listing.stderr.strip()}")
    links = [line.split("\t", 1)[1] for line in listing.stdout.splitlines() if line[:6] == "120000"]
    assert links == []


def test_an_installed_weaver_finds_its_migrations_and_workflows() -> None:
    """However Weaver was installed here (editable, from a checkout), the mapped folders are
    where it looks for them."""
    from weaver.cache.db import migrations_dir

    assert migrations_dir() == ROOT / "alembic"
    builtin = importlib.import_module("weaver.builtin_workflows")
    assert Path(builtin.__file__ or "").parent == ROOT / "workflows"


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


HOME = PYPROJECT["project"]["urls"]["Homepage"]
IN_HOME = re.compile(
    rf"^(?:{re.escape(HOME)}/(?:blob|tree)/main|"
    r"https://raw\.githubusercontent\.com/weaver-mcp/weaver/main)/([^#]+)(?:#.*)?$"
)  # the file a link names, without the heading it may point at


def readme_targets() -> list[str]:
    """Every link's and image's target in README.md, as a renderer finds them (not in code)."""
    tokens = MarkdownIt().parse((ROOT / "README.md").read_text(encoding="utf-8"))
    found = []
    for token in tokens:
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs["href"]))
            elif child.type == "image":
                found.append(str(child.attrs["src"]))
    return found


def test_the_readme_links_work_where_the_package_shows_it() -> None:
    # PyPI shows README.md without the repository around it: a relative link goes nowhere.
    targets = readme_targets()
    assert any("docs/images/" in t for t in targets)  # the images are among them
    relative = [t for t in targets if not t.startswith(("https://", "http://", "#"))]
    assert relative == []
    # A link into the project's home names a file this checkout has.
    for target in targets:
        if inside := IN_HOME.match(target):
            assert (ROOT / inside.group(1)).exists(), target


def test_the_package_names_its_home() -> None:
    urls = PYPROJECT["project"]["urls"]
    assert set(urls) == {"Homepage", "Repository", "Documentation", "Changelog", "Issues"}
    assert all(url.startswith(HOME) for url in urls.values())
    assert (ROOT / "CHANGELOG.md").is_file() and urls["Changelog"].endswith("/CHANGELOG.md")
