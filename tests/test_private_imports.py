"""No module imports a private name (`_x`) from another of Weaver's modules: what two modules
share is public in one of them (as `weaver.markdown.patterns` is for the parser and relink)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("weaver", "workflows", "alembic", "tests")


def private_imports(source: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("weaver"):
            found += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    sources = [path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py")]
    assert len(sources) > 100
    offenders = {
        str(path.relative_to(ROOT)): names for path in sources if (names := private_imports(path))
    }
    assert offenders == {}


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from weaver.markdown.patterns import _Masker, FILL\n", encoding="utf-8")
    assert private_imports(source) == ["weaver.markdown.patterns._Masker"]
