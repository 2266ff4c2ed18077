"""When a view's row depends on its own file alone, and what names that computation.

A row of a view is its filters' verdict and the values of the keys the view reads. When every
expression reads only the row's own file (its properties, tags, name, dates, size) and at most
today's date, the row is a function of that file's cached facts, the day and the expressions:
it can be kept and used again until the file changes. An expression that reads another file
(`file.links` resolve against the whole vault, `file.backlinks` come from other notes,
`link.asFile()`, `file()`), the clock (`now()`, `date.relative()`), `this`, or chance
(`random()`) makes the row depend on more than that, and it is evaluated afresh each time.

`row_key(document, view)` is the key naming one such computation (the expressions' text and
the keys read), or None when a row reads more than its own file."""

from __future__ import annotations

from collections.abc import Hashable

from weaver.bases.compiler import Program
from weaver.bases.document import BaseDocument, ViewSpec
from weaver.bases.filters import AllOf, AnyOf, Condition, Filter, NoneOf
from weaver.bases.syntax import Call, Index, Literal, Member, Name, Node, children
from weaver.bases.view import keys_read

# Functions whose answer depends on more than their arguments and the day.
_BEYOND_THE_ROW = frozenset(
    {"now", "file", "image", "random", "asFile", "linksTo", "relative", "hasLink"}
)
# A file's fields that other files decide: links resolve against the vault, backlinks are
# other notes' links, and `file.file` is the file object itself, which reads anything.
_OTHER_FILES_FIELDS = frozenset({"links", "backlinks", "embeds", "file"})


def row_key(document: BaseDocument, view: ViewSpec) -> Hashable | None:
    """What names the computation of the view's rows, or None when a row reads more than its
    own file and the day. Two views with the same key compute the same row for a file."""
    keys = keys_read(view)
    if not all(_own_key(key) for key in keys):
        return None
    programs = [*_filter_sources(view.filters), *document.formulas.values()]
    if document.filters is not None:
        programs += _filter_sources(document.filters)
    if not all(_own(program.root) for program in programs):
        return None
    formulas = tuple(sorted((name, p.source) for name, p in document.formulas.items()))
    filters = (_filter_key(document.filters), _filter_key(view.filters))
    return (filters, formulas, keys, view.sort)  # a row keeps its order in each sort key


def _own_key(key: str) -> bool:
    scope, _, name = key.partition(".")
    if scope == "file":
        return name not in _OTHER_FILES_FIELDS
    return scope in ("note", "formula")


def _filter_sources(filter: Filter | None) -> list[Program]:
    match filter:
        case None:
            return []
        case Condition():
            return [filter.program]
        case _:
            return [program for item in filter.items for program in _filter_sources(item)]


def _filter_key(filter: Filter | None) -> Hashable:
    match filter:
        case None:
            return None
        case Condition():
            return filter.program.source
        case AllOf():
            return ("and", *map(_filter_key, filter.items))
        case AnyOf():
            return ("or", *map(_filter_key, filter.items))
        case NoneOf():
            return ("not", *map(_filter_key, filter.items))


def _own(node: Node) -> bool:
    """Whether `node` reads nothing but its row's own file and the day."""
    match node:
        case Name(name=name):
            # `file` alone is the file object, which reaches other files; `note` and `formula`
            # alone are read as properties, checked where they are used.
            return name not in ("this", "file")
        case Member(target=Name(name="file"), name=name):
            return name not in _OTHER_FILES_FIELDS
        case Index(target=Name(name="file"), index=Literal(value=str() as name)):
            return name not in _OTHER_FILES_FIELDS
        case Call(target=Name(name="file"), name=name, args=args):
            return name not in _BEYOND_THE_ROW and all(map(_own, args))
        case Call(name=name) if name in _BEYOND_THE_ROW:
            return False
    return all(map(_own, children(node)))
