"""Where each module of the installed `weaver` package lives in the repository: below `weaver/`,
or in a folder pyproject.toml's `package-dir` maps in (alembic/ as weaver.migrations, workflows/
as weaver.builtin_workflows)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def mapped_folders() -> dict[str, Path]:
    """Package name -> the repository folder installed as it (the root mapping left out)."""
    mapping = PYPROJECT["tool"]["setuptools"]["package-dir"]
    return {package: REPO / folder for package, folder in mapping.items() if package}


def package_modules(root: Path = REPO / "weaver", mapped: bool = True) -> dict[str, Path]:
    """Dotted module name -> its file, for every module of the package at `root` (with the
    mapped folders when `mapped`)."""
    folders = {root.name: root} | (mapped_folders() if mapped else {})
    modules = {}
    for package, folder in folders.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            modules[".".join([package, *parts])] = path
    return modules
