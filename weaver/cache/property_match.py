"""`query_files where=`: frontmatter property tests, matched in the property index.

`matched_notes` turns `PropertyCondition` values into the paths of the notes passing them (a
subquery over `note_properties`) and conditions on `notes`; `count_matched` counts those paths
without reading the notes. Values compare as `cache.write.property_value` stores them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, Select, and_, exists, func, or_, select, true
from sqlalchemy.orm import aliased

from weaver.cache.models import Note, NoteProperty

PropertyOp = Literal["eq", "in", "lt", "lte", "gt", "gte", "exists", "contains"]
Scalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class PropertyCondition:
    """One `query_files where=` test of a frontmatter property (`key` case-folded).

    `eq` (and `contains`, for a list property: one element equal) compares a value as stored
    (`cache.write.property_value`): text with text, numbers with numbers, booleans as
    booleans; `in` is any of `values`; `lt`/`lte`/`gt`/`gte` compare numbers, or text (ISO
    dates compare as dates do); `exists` is whether the note has the property at all."""

    key: str
    op: PropertyOp
    values: tuple[Scalar, ...] = ()
    present: bool = True  # for `exists`


RANGE_OPS = ("lt", "lte", "gt", "gte")
# How far the rows of each `where` test are counted to find the narrowest: enough to tell a
# rare value from a common one, cheap however common (an index range read up to here).
DRIVER_PROBE_ROWS = 2_000
Props = Any  # NoteProperty, or an alias of it


@dataclass(frozen=True, slots=True)
class _PropertyTest:
    """The rows of one property (by `key`) that pass `test` (one `where` test, or the bounds of
    one property's range together)."""

    key: str
    conditions: tuple[PropertyCondition, ...]

    def rows(self, props: Props) -> ColumnElement[bool]:
        tests = (_value_test(condition, props) for condition in self.conditions)
        return and_(props.key == self.key, *tests)


# What `matched_notes` found: the paths passing the tests (None: no test but `exists: false`
# ones), and those as conditions on notes.
WhereMatch = tuple[Select[str] | None, list[ColumnElement[bool]]]


def matched_notes(conn: Connection, where: Iterable[PropertyCondition]) -> WhereMatch:
    """The paths passing every `where` test but `exists: false` ones (None when there are only
    such), and those as conditions on notes.

    The narrowest test (fewest rows, counted up to `DRIVER_PROBE_ROWS` each) lists its notes
    from the property index and each other test is looked up for those notes only (one
    IN-list per test made SQLite list every test's notes in full: docs/benchmarks-notes.md).
    The bounds of one property's range
    (`{"due": {"gte": a, "lt": b}}`) are one test, so the index reads the range between them;
    `exists: false` tests are notes missing from the property's list."""
    tests: dict[tuple[str, int], list[PropertyCondition]] = {}
    absent: list[ColumnElement[bool]] = []
    for n, condition in enumerate(where):
        if condition.op == "exists" and not condition.present:
            listed = select(NoteProperty.note_path).where(NoteProperty.key == condition.key)
            absent.append(Note.path.not_in(listed))
        else:  # a range's bounds share one test; every other test is its own
            tests.setdefault((condition.key, -1 if condition.op in RANGE_OPS else n), []).append(
                condition
            )
    if not tests:
        return None, absent
    found = [_PropertyTest(key, tuple(conditions)) for (key, _), conditions in tests.items()]
    driver = found[0]
    if len(found) > 1:
        driver = min(found, key=lambda test: _rows_up_to(conn, test, DRIVER_PROBE_ROWS))
    source = aliased(NoteProperty)
    matched = select(source.note_path).where(driver.rows(source))
    for other in found:
        if other is not driver:
            props = aliased(NoteProperty)
            also = select(props.id).where(props.note_path == source.note_path, other.rows(props))
            matched = matched.where(exists(also))
    return matched, absent


def count_matched(conn: Connection, where: WhereMatch) -> int | None:
    """How many notes `where` (from `matched_notes`) matches, counted in the property index: a
    path listed there is a note's (its rows go with it), so the notes need not be read. None
    when it has `exists: false` tests or no other test: those need the notes themselves."""
    matched, absent = where
    if matched is None or absent:
        return None
    paths = matched.subquery()
    return int(conn.execute(select(func.count(paths.c.note_path.distinct()))).scalar_one())


def _rows_up_to(conn: Connection, test: _PropertyTest, cap: int) -> int:
    """How many property rows pass `test`, counted no further than `cap`."""
    rows = select(NoteProperty.id).where(test.rows(NoteProperty)).limit(cap).subquery()
    return int(conn.execute(select(func.count()).select_from(rows)).scalar_one())


def _value_test(condition: PropertyCondition, props: Props) -> ColumnElement[bool]:
    if condition.op == "exists":  # present: any row of the property
        return true()
    if condition.op in ("eq", "contains", "in"):
        return or_(*(_equals(value, props) for value in condition.values))
    (value,) = condition.values
    if isinstance(value, str):
        return _compare(props.text, condition.op, value)
    return _compare(props.num, condition.op, float(value or 0))


def _compare(column: Any, op: PropertyOp, bound: str | float) -> ColumnElement[bool]:
    test: ColumnElement[bool]
    match op:
        case "lt":
            test = column < bound
        case "lte":
            test = column <= bound
        case "gt":
            test = column > bound
        case _:
            test = column >= bound
    return test


def _equals(value: Scalar, props: Props) -> ColumnElement[bool]:
    test: ColumnElement[bool]
    if value is None:
        test = and_(props.text.is_(None), props.num.is_(None))
    elif isinstance(value, bool):
        test = props.text == ("true" if value else "false")
    elif isinstance(value, int | float):
        test = props.num == float(value)
    else:
        test = props.text == value
    return test
