"""A base read from its YAML: a `.base` file, a ```base block of a note, or the same parts
given as arguments (`document_from_query`). The help's "Bases syntax" page defines the keys:
`filters`, `formulas`, `properties` (display names), `summaries` (summary formulas over
`values`) and `views` (each with `type`, `name`, `filters`, `order`, `sort`, `groupBy`, `limit`,
`summaries`; other keys belong to the view's layout and are kept out of the way).

Everything is checked here, before any file is looked at: every fault is a `BaseFileError`
naming its place in the YAML, or the `BaseExpressionError` of an expression that cannot be
read. A key that is almost a known one (`filter:`) is an error rather than ignored, since a
filter dropped silently would show every file."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from weaver.bases.compiler import Program, compile_expression
from weaver.bases.fields import FILE_FIELDS
from weaver.bases.filters import Filter, parse_filter
from weaver.bases.summaries import BUILTIN_SUMMARIES
from weaver.bases.syntax import Name, Node, children
from weaver.errors import BaseExpressionError, BaseFileError, WeaverError
from weaver.markdown.frontmatter import ObsidianYAMLHandler
from weaver.markdown.patterns import code_spans

_TOP_KEYS = ("filters", "formulas", "properties", "summaries", "views")
_VIEW_KEYS = ("type", "name", "filters", "order", "sort", "groupBy", "limit", "summaries")
_DIRECTIONS = {"ASC": False, "DESC": True}
# What a summary formula may name: its column's `values`, `this`, and the names list methods bind.
_SUMMARY_NAMES = frozenset({"values", "this", "value", "index", "acc"})
_BASE_FENCE = re.compile(r"[ \t>]*(`{3,}|~{3,})[ \t]*base[ \t]*(?:\n|$)")
DEFAULT_VIEW_NAME = "Table"


@dataclass(frozen=True, slots=True)
class SortKey:
    property: str
    descending: bool


@dataclass(frozen=True, slots=True)
class ViewSpec:
    """One view: its own filters (joined with the base's by `and`), the columns (`order`, as
    property keys), the sort keys in priority order, the grouping, the row limit, and a summary
    name per column key."""

    name: str
    type: str
    filters: Filter | None = None
    order: tuple[str, ...] = ()
    sort: tuple[SortKey, ...] = ()
    group_by: SortKey | None = None
    limit: int | None = None
    summaries: Mapping[str, str] = field(default_factory=dict)
    # Why the view cannot be run (its own settings or filters are faulty): asking for it raises
    # this, while the base's other views still run, as each fails alone in the app.
    error: WeaverError | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class BaseDocument:
    """A base: keys of `display_names` and of the views' columns are property keys
    (`note.status`, `file.name`, `formula.ppu`; see `property_key`)."""

    filters: Filter | None = None
    formulas: Mapping[str, Program] = field(default_factory=dict)
    display_names: Mapping[str, str] = field(default_factory=dict)
    summaries: Mapping[str, Program] = field(default_factory=dict)
    views: tuple[ViewSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class BaseBlock:
    """A ```base block of a note: its place among the note's base blocks (from 0), the 1-based
    line of its opening fence, and its YAML."""

    index: int
    line: int
    text: str


def property_key(raw: str) -> str:
    """The column key of a property as a base names it: `status` and `note.status` are both
    `note.status`; `file.*` and `formula.*` keep their prefix."""
    if raw.startswith(("note.", "file.", "formula.")):
        return raw
    return f"note.{raw}"


def parse_base(text: str) -> BaseDocument:
    """The base a `.base` file or a ```base block holds; an empty one is a base of every file
    with no views (`view_of` then gives a default table)."""
    raw = _load_yaml(text)
    if raw is None:
        return BaseDocument()
    if not isinstance(raw, Mapping):
        raise BaseFileError("the file", "a base is a YAML mapping (filters, formulas, views...)")
    for key in raw:
        if key not in _TOP_KEYS:
            raise BaseFileError(str(key), f"not a key of a base{_did_you_mean(key, _TOP_KEYS)}")
    formulas = _formulas(raw.get("formulas"), "formulas")
    summaries = _summary_formulas(raw.get("summaries"))
    return BaseDocument(
        filters=_optional_filter(raw.get("filters"), "filters"),
        formulas=formulas,
        display_names=_display_names(raw.get("properties")),
        summaries=summaries,
        views=_views(raw.get("views"), formulas, summaries),
    )


def view_of(document: BaseDocument, name: str | None) -> ViewSpec:
    """The view called `name` (None: the first one; a base with no views: a default table of
    file names)."""
    if name is None:
        if not document.views:
            return ViewSpec(DEFAULT_VIEW_NAME, "table")
        name = document.views[0].name
    for view in document.views:
        if view.name == name:
            if view.error is not None:
                raise view.error
            return view
    names = ", ".join(repr(view.name) for view in document.views) or "none"
    raise BaseFileError("views", f"no view named {name!r} (views: {names})")


def base_blocks(markdown: str) -> list[BaseBlock]:
    """The ```base blocks of a note, in order. Fences are found as the note's parse finds code
    (`markdown.patterns`), so a fence inside a comment or another block is no base."""
    blocks: list[BaseBlock] = []
    for start, end in code_spans(markdown):
        opening = _BASE_FENCE.match(markdown, start)
        if opening is None:
            continue
        line = markdown.count("\n", 0, start) + 1
        text = _block_text(markdown, start, opening, end)
        blocks.append(BaseBlock(len(blocks), line, text))
    return blocks


def document_from_query(
    filter: object | None,
    formulas: Mapping[str, str] | None,
    sort: Sequence[Mapping[str, str]] | None,
    order: Sequence[str] | None,
    group_by: Mapping[str, str] | None,
    limit: int | None,
) -> BaseDocument:
    """A base of one view, named "query", from a tool's arguments: the same language and the
    same errors as a file, with `where` naming the argument (`filter.and[1]`, `sort[0]`)."""
    programs = _formulas(formulas, "formulas")
    view = ViewSpec(
        name="query",
        type="table",
        order=tuple(_order(order, "order", programs)),
        sort=tuple(_sort(sort, "sort", programs)),
        group_by=None if group_by is None else _sort_key(group_by, "group_by", programs),
        limit=_limit(limit, "limit"),
    )
    return BaseDocument(
        filters=_optional_filter(filter, "filter"), formulas=programs, views=(view,)
    )


# ---------------------------------------------------------------- the YAML


def _load_yaml(text: str) -> object:
    """The YAML as Obsidian's JavaScript parser reads it (YAML 1.2 scalars: `2025-01-01` stays
    text), through the loader the frontmatter uses."""
    try:
        return ObsidianYAMLHandler().load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}" if mark is not None else "the file"
        raise BaseFileError(where, f"invalid YAML: {exc.problem or exc}") from None
    except Exception as exc:  # the loader's size guard, deep nesting: still not a base
        raise BaseFileError("the file", f"invalid YAML: {type(exc).__name__}") from None


def _did_you_mean(key: object, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else f" (keys: {', '.join(known)})"


def _mapping(raw: object, where: str) -> Mapping[str, object]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise BaseFileError(where, "expected a mapping of names to values")
    return raw


def _expression(raw: object, where: str) -> Program:
    """A formula's text; YAML may read a bare `2` or `true` as a number or boolean."""
    if isinstance(raw, bool):
        return compile_expression("true" if raw else "false")
    if isinstance(raw, str | int | float):
        return compile_expression(str(raw))
    raise BaseFileError(where, "a formula is an expression in a string")


def _optional_filter(raw: object, where: str) -> Filter | None:
    return None if raw is None else parse_filter(raw, where)


def _formulas(raw: object, where: str) -> dict[str, Program]:
    items = _mapping(raw, where).items()
    return {str(name): _expression(text, f"{where}.{name}") for name, text in items}


def _summary_formulas(raw: object) -> dict[str, Program]:
    summaries = {}
    for name, text in _mapping(raw, "summaries").items():
        where = f"summaries.{name}"
        program = _expression(text, where)
        for node in _names(program.root):
            if node.name not in _SUMMARY_NAMES:
                message = f"a summary reads its column's 'values', not {node.name!r}"
                raise BaseFileError(where, message)
        summaries[str(name)] = program
    return summaries


def _names(node: Node) -> Iterator[Name]:
    """Every name an expression reads (`formula.x` reads `formula`)."""
    if isinstance(node, Name):
        yield node
    for child in children(node):
        yield from _names(child)


def _display_names(raw: object) -> dict[str, str]:
    names = {}
    for key, settings in _mapping(raw, "properties").items():
        where = f"properties.{key}"
        if not isinstance(settings, Mapping):
            raise BaseFileError(where, "expected a mapping (displayName: ...)")
        label = settings.get("displayName")
        if label is None:
            continue
        if isinstance(label, bool) or not isinstance(label, str | int | float):
            raise BaseFileError(f"{where}.displayName", "a display name is text")
        names[property_key(str(key))] = str(label)
    return names


# ---------------------------------------------------------------- views


def _views(
    raw: object, formulas: Mapping[str, Program], summaries: Mapping[str, Program]
) -> tuple[ViewSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BaseFileError("views", "expected a list of views")
    return tuple(
        _view_or_fault(item, f"views[{i}]", formulas, summaries) for i, item in enumerate(raw)
    )


def _view_or_fault(
    raw: object, where: str, formulas: Mapping[str, Program], summaries: Mapping[str, Program]
) -> ViewSpec:
    """The view, or (when its own settings are faulty) a view that raises its fault when it is
    asked for: the rest of the base stays usable."""
    try:
        return _view(raw, where, formulas, summaries)
    except (BaseFileError, BaseExpressionError) as fault:
        named = raw.get("name") if isinstance(raw, Mapping) else None
        kind = raw.get("type") if isinstance(raw, Mapping) else None
        name = named if isinstance(named, str) else where
        return ViewSpec(name, kind if isinstance(kind, str) else "table", error=fault)


def _view(
    raw: object, where: str, formulas: Mapping[str, Program], summaries: Mapping[str, Program]
) -> ViewSpec:
    if not isinstance(raw, Mapping):
        raise BaseFileError(where, "a view is a mapping (type, name, order...)")
    for key in raw:
        # Layouts keep their own settings in a view (rowHeight, image...): only a near miss of
        # a key this module reads is a mistake.
        near = difflib.get_close_matches(str(key), _VIEW_KEYS, n=1, cutoff=0.75)
        if key not in _VIEW_KEYS and near:
            raise BaseFileError(
                f"{where}.{key}", f"not a key of a view (did you mean {near[0]!r}?)"
            )
    kind = _text(raw.get("type", "table"), f"{where}.type")
    return ViewSpec(
        name=_text(raw.get("name", kind.title()), f"{where}.name"),
        type=kind,
        filters=_optional_filter(raw.get("filters"), f"{where}.filters"),
        order=tuple(_order(raw.get("order"), f"{where}.order", formulas)),
        sort=tuple(_sort(raw.get("sort"), f"{where}.sort", formulas)),
        group_by=_group_by(raw.get("groupBy"), f"{where}.groupBy", formulas),
        limit=_limit(raw.get("limit"), f"{where}.limit"),
        summaries=_view_summaries(raw.get("summaries"), f"{where}.summaries", summaries),
    )


def _text(raw: object, where: str) -> str:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise BaseFileError(where, "expected text")
    return str(raw)


def _column(raw: object, where: str, formulas: Mapping[str, Program]) -> str:
    """A property key a view reads: a formula it names must exist, a file field be one."""
    if not isinstance(raw, str) or not raw.strip():
        raise BaseFileError(where, "expected a property name (status, file.name, formula.x)")
    key = property_key(raw.strip())
    scope, _, name = key.partition(".")
    if scope == "formula" and name not in formulas:
        known = ", ".join(sorted(formulas)) or "none"
        raise BaseFileError(where, f"no formula {name!r} in this base (formulas: {known})")
    if scope == "file" and name not in FILE_FIELDS:
        raise BaseFileError(where, f"a file has no property {name!r}")
    return key


def _order(raw: object, where: str, formulas: Mapping[str, Program]) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise BaseFileError(where, "expected a list of property names")
    return [_column(item, f"{where}[{i}]", formulas) for i, item in enumerate(raw)]


def _sort(raw: object, where: str, formulas: Mapping[str, Program]) -> list[SortKey]:
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise BaseFileError(where, "expected a list of {property, direction}")
    return [_sort_key(item, f"{where}[{i}]", formulas) for i, item in enumerate(raw)]


def _group_by(raw: object, where: str, formulas: Mapping[str, Program]) -> SortKey | None:
    return None if raw is None else _sort_key(raw, where, formulas)


def _sort_key(raw: object, where: str, formulas: Mapping[str, Program]) -> SortKey:
    if not isinstance(raw, Mapping):
        raise BaseFileError(where, "expected {property: ..., direction: ASC or DESC}")
    key = _column(raw.get("property"), f"{where}.property", formulas)
    direction = raw.get("direction", "ASC")
    if not isinstance(direction, str) or direction.upper() not in _DIRECTIONS:
        raise BaseFileError(f"{where}.direction", "expected ASC or DESC")
    return SortKey(key, _DIRECTIONS[direction.upper()])


def _limit(raw: object, where: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise BaseFileError(where, "expected a whole number of rows, 1 or more")
    return raw


def _view_summaries(raw: object, where: str, summaries: Mapping[str, Program]) -> dict[str, str]:
    chosen = {}
    for key, name in _mapping(raw, where).items():
        place = f"{where}.{key}"
        if not isinstance(name, str) or (name not in BUILTIN_SUMMARIES and name not in summaries):
            known = ", ".join([*BUILTIN_SUMMARIES, *summaries])
            raise BaseFileError(place, f"no summary {name!r} (summaries: {known})")
        chosen[property_key(str(key))] = name
    return chosen


# ---------------------------------------------------------------- blocks


def _block_text(markdown: str, start: int, opening: re.Match[str], end: int) -> str:
    """The YAML between the fences, each line without the prefix (indent, `>`) of the opening
    fence. The span ends with the closing fence's line, or at the note's end when unclosed."""
    prefix = markdown[start : opening.start(1)]
    lines = markdown[opening.end() : end].split("\n")
    fence = opening.group(1)
    closing = lines[-1].strip(" \t>")
    if len(closing) >= len(fence) and closing == fence[0] * len(closing):
        lines.pop()
    return "\n".join(line.removeprefix(prefix) for line in lines)
