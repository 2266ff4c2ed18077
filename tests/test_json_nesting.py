"""The nesting depth of JSON texts, found without parsing (or recursing)."""

from __future__ import annotations

import json

import pytest

from weaver.json_nesting import MAX_JSON_DEPTH, JSONTooDeepError, json_depth, load_json


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("3", 0),
        ('"[[["', 0),
        ("{}", 1),
        ('[{"a": [1, {"b": []}]}]', 5),
        (json.dumps(["[[[", {"k": '\\"]]]'}, "a\\"]), 2),  # brackets and escapes in strings
        ('[["unterminated [[[[', 2),
        ("[" * 200_000, 200_000),
    ],
)
def test_depth_counts_brackets_outside_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth
    assert json_depth(text.encode()) == depth


def test_load_json_refuses_what_the_parser_could_not_take() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    with pytest.raises(RecursionError):
        json.loads(deep)
    with pytest.raises(JSONTooDeepError, match="nested deeper than 512 levels"):
        load_json(deep)
    limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_depth(load_json(limit) and limit) == MAX_JSON_DEPTH
    with pytest.raises(ValueError):  # what callers catch for "not JSON" either way
        load_json("[" * (MAX_JSON_DEPTH + 1))


def test_cli_input_nested_too_deep_is_a_usage_error(
    vault_dir: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from weaver.cli import main

    deep = "[" * 200_000 + "]" * 200_000
    assert main(["--vault", str(vault_dir), "trigger", "markdown-analyzer", "--input", deep]) == 2
    assert capsys.readouterr().err == (
        "weaver: --input is not valid JSON: nested deeper than 512 levels\n"
    )
