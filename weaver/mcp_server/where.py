"""`query_files where=`: the client's property filters as `PropertyCondition` values.

    {"priority": 1}                        equals (text, number or boolean, as written)
    {"status": ["draft", "review"]}        any of these
    {"due": {"lt": "2026-12-01"}}          lt / lte / gt / gte: numbers, or text (ISO dates)
    {"tags": {"contains": "x"}}            a list property holding this element
    {"cover": {"exists": false}}           the property present (or absent)

Several properties, or several operators on one, must all hold.
"""

from __future__ import annotations

from typing import Any, get_args

from weaver.cache.property_match import PropertyCondition, PropertyOp, Scalar
from weaver.mcp_server.envelope import ArgumentError

MAX_PROPERTIES = 10
MAX_VALUES = 100
OPERATORS: tuple[str, ...] = get_args(PropertyOp)


def parse_where(where: dict[str, Any] | None) -> tuple[PropertyCondition, ...]:
    if not where:
        return ()
    if len(where) > MAX_PROPERTIES:
        raise ArgumentError("where", f"at most {MAX_PROPERTIES} properties")
    conditions: list[PropertyCondition] = []
    for name, test in where.items():
        key = name.strip().casefold()
        if not key:
            raise ArgumentError("where", "a property name is empty")
        conditions.extend(_conditions(name, key, test))
    return tuple(conditions)


def _conditions(name: str, key: str, test: Any) -> list[PropertyCondition]:
    if isinstance(test, list):
        return [PropertyCondition(key, "in", _scalars(name, test))]
    if not isinstance(test, dict):
        return [PropertyCondition(key, "eq", (_scalar(name, test),))]
    if not test:
        raise ArgumentError(f"where.{name}", f"no operator (use {', '.join(OPERATORS)})")
    found = []
    for op, value in test.items():
        found.append(_condition(name, key, op, value))
    return found


def _condition(name: str, key: str, op: str, value: Any) -> PropertyCondition:
    where = f"where.{name}.{op}"
    if op == "exists":
        if not isinstance(value, bool):
            raise ArgumentError(where, "expected true or false")
        return PropertyCondition(key, "exists", present=value)
    if op == "in":
        if not isinstance(value, list):
            raise ArgumentError(where, "expected a list of values")
        return PropertyCondition(key, "in", _scalars(f"{name}.in", value))
    if op in ("eq", "contains"):
        return PropertyCondition(key, "eq", (_scalar(f"{name}.{op}", value),))
    if op in ("lt", "lte", "gt", "gte"):
        if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ArgumentError(where, "expected a number or text (an ISO date, say)")
        return PropertyCondition(key, op, (value,))  # type: ignore[arg-type]  # op checked above
    raise ArgumentError(where, f"unknown operator (use {', '.join(OPERATORS)})")


def _scalars(name: str, values: list[Any]) -> tuple[Scalar, ...]:
    if not values or len(values) > MAX_VALUES:
        raise ArgumentError(f"where.{name}", f"expected 1 to {MAX_VALUES} values")
    return tuple(_scalar(name, value) for value in values)


def _scalar(name: str, value: Any) -> Scalar:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ArgumentError(f"where.{name}", "expected text, a number, true/false or null")
