"""Published schemas are lean (a model used once inlined, one used twice defined once, no
`anyOf` for a nullable field, no titles; outputs without descriptions) and accept and reject
exactly what pydantic's own schema does."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, TypeAdapter

from weaver.mcp_server.schemas import Envelope, WireModel, lean_schema


class Leaf(WireModel):
    title: str
    kind: Literal["a", "b"] | None
    score: int | None = None
    extra: dict[str, Any] | None


class Tree(BaseModel):
    name: str
    children: list[Tree]


class Count(WireModel):
    total: int = Field(description="How many")


class Page(WireModel):
    leaves: list[Leaf]
    best: Leaf | None
    tree: Tree | None = None
    count: Count | None = None


LEAF = {"title": "x", "kind": "a", "score": 3, "extra": {"k": [1]}}
TREE = {"name": "r", "children": [{"name": "c", "children": []}]}
INSTANCES = [
    {"leaves": [LEAF], "best": None},
    {"leaves": [], "best": {**LEAF, "kind": None, "score": None, "extra": None}},
    {
        "leaves": [],
        "best": None,
        "tree": {"name": "r", "children": [{"name": "c", "children": []}]},
    },
    {"leaves": [{**LEAF, "kind": "c"}], "best": None},  # not in the enum
    {"leaves": [{**LEAF, "title": None}], "best": None},  # not nullable
    {"leaves": [{**LEAF, "score": "3"}], "best": None},
    {"leaves": [LEAF]},  # best is required
    {"leaves": [], "best": None, "tree": {"name": "r", "children": [{"name": 1, "children": []}]}},
    {"leaves": [], "best": None, "count": {"total": "many"}},
]


def schema_of(model: Any) -> dict[str, Any]:
    return TypeAdapter(model).json_schema(by_alias=True)


@pytest.mark.parametrize("instance", INSTANCES)
def test_lean_schema_accepts_and_rejects_as_the_original(instance: dict[str, Any]) -> None:
    original = schema_of(Envelope[Page])
    lean = lean_schema(original)
    envelope = {"success": True, "data": instance, "metadata": {"executionTime": 1, "cacheHit": 1}}
    for candidate in (instance, envelope):
        checked = schema_of(Page) if candidate is instance else original
        expected = Draft202012Validator(checked).is_valid(candidate)
        assert Draft202012Validator(lean_schema(checked)).is_valid(candidate) is expected
    assert Draft202012Validator(lean).is_valid(envelope) is Draft202012Validator(original).is_valid(
        envelope
    )


def test_lean_schema_shares_what_repeats_and_folds_nullable_fields() -> None:
    lean = lean_schema(schema_of(Page))
    text = repr(lean)
    assert "#/$defs/Count" not in text  # used once: inlined where it is used
    assert set(lean["$defs"]) == {"Leaf", "Tree"}  # used twice, and recursive: defined once
    assert text.count("'title': {'type': 'string'}") == 1  # Leaf's fields are listed once
    leaf = lean["$defs"]["Leaf"]
    assert lean["properties"]["leaves"]["items"] == {"$ref": "#/$defs/Leaf"}
    assert leaf["properties"]["title"] == {"type": "string"}  # a property named "title" stays
    assert leaf["properties"]["score"]["type"] == ["integer", "null"]
    assert "default" not in leaf["properties"]["score"]  # null is what an absent field means
    assert "anyOf" in leaf["properties"]["kind"]  # an enum would reject null if folded
    assert "title" not in leaf


def test_an_output_schema_is_listed_without_descriptions() -> None:
    count = lean_schema(schema_of(Page))["properties"]["count"]
    assert count["properties"]["total"]["description"] == "How many"
    bare = lean_schema(schema_of(Page), descriptions=False)["properties"]["count"]
    assert bare["properties"]["total"] == {"type": "integer"}


def test_the_instances_above_include_invalid_ones() -> None:
    validity = [Draft202012Validator(schema_of(Page)).is_valid(i) for i in INSTANCES]
    assert validity == [True] * 3 + [False] * 6
