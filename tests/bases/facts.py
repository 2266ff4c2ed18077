"""A file's facts for the Bases tests, a one-call evaluation with a fixed clock, and a view's
result read back as JSON."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from weaver.bases import Context, Environment, FileFacts, Value, compile_expression, evaluate
from weaver.bases.view import Plain, ViewResult, plain

# A Tuesday noon: every test's now().
NOW = dt.datetime(2025, 5, 27, 12, 0, 0)


@dataclass(frozen=True)
class Facts:
    path: str = "Projects/Plan.md"
    size: int = 1234
    ctime: dt.datetime = dt.datetime(2025, 1, 10, 9, 30)
    mtime: dt.datetime = dt.datetime(2025, 5, 25, 18, 0)
    tags: tuple[str, ...] = ("project", "book/fiction")
    links: tuple[str, ...] = ("Books/Textbook.md", "Missing note")
    backlinks: tuple[str, ...] = ("Daily/2025-05-26.md",)
    embeds: tuple[str, ...] = ("Images/cover.png",)
    properties: Mapping[str, object] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def folder(self) -> str:
        return self.path.rpartition("/")[0]

    @property
    def ext(self) -> str:
        return self.name.rpartition(".")[2]


def env(
    formulas: Mapping[str, str] | None = None,
    this: FileFacts | None = None,
    files: tuple[FileFacts, ...] = (),
) -> Environment:
    by_path = {f.path: f for f in files}

    def find_file(target: str) -> FileFacts | None:
        return by_path.get(target) or by_path.get(f"{target}.md")

    parsed = {name: compile_expression(text) for name, text in (formulas or {}).items()}
    return Environment(
        now=NOW, formulas=parsed, this=this, find_file=find_file, random=lambda: 0.25
    )


def value(
    text: str, facts: FileFacts | None = None, environment: Environment | None = None
) -> Value:
    """`text` evaluated for `facts` (a plain note by default)."""
    context = Context(facts or Facts(), environment or env())
    return evaluate(compile_expression(text), context)


def table(result: ViewResult) -> list[tuple[str, list[Plain]]]:
    """A view's rows as a reader sees them: each path with its cells as JSON."""
    return [(row.path, [plain(cell) for cell in row.cells]) for row in result.rows]


def groups(result: ViewResult) -> list[tuple[Plain, int, int, dict[str, Plain]]]:
    """A view's groups: key, first row, row count, summaries (as JSON)."""
    assert result.groups is not None
    return [
        (plain(g.key), g.start, g.count, {k: plain(v) for k, v in g.summaries.items()})
        for g in result.groups
    ]
