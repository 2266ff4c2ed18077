"""The status registry reads a vault's Tasks plugin settings as the plugin does: its four
default statuses, the user's core and custom ones, unknown symbols as TODO, and a broken file
as the defaults plus a problem to show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from weaver.tasks.statuses import (
    SETTINGS_FILE,
    Status,
    StatusRegistry,
    StatusSettingsError,
    parse_status_settings,
    read_status_registry,
)


def settings(core: list[dict[str, Any]] | None, custom: list[dict[str, Any]] | None) -> str:
    status_settings: dict[str, Any] = {}
    if core is not None:
        status_settings["coreStatuses"] = core
    if custom is not None:
        status_settings["customStatuses"] = custom
    return json.dumps({"globalFilter": "", "statusSettings": status_settings})


def entry(symbol: str, name: str, next_symbol: str, type_: str) -> dict[str, Any]:
    return {
        "symbol": symbol,
        "name": name,
        "nextStatusSymbol": next_symbol,
        "availableAsCommand": True,
        "type": type_,
    }


def write_settings(vault: Path, text: str) -> None:
    path = vault / SETTINGS_FILE
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("symbol", "name", "next_symbol", "type_"),
    [
        (" ", "Todo", "x", "TODO"),
        ("x", "Done", " ", "DONE"),
        ("/", "In Progress", "x", "IN_PROGRESS"),
        ("-", "Cancelled", " ", "CANCELLED"),
    ],
)
def test_the_plugin_defaults(symbol: str, name: str, next_symbol: str, type_: str) -> None:
    assert StatusRegistry().get(symbol) == Status(symbol, name, next_symbol, type_)  # type: ignore[arg-type]


@pytest.mark.parametrize("symbol", ["?", "X", "!", ">"])
def test_a_symbol_no_status_declares_is_an_unknown_todo(symbol: str) -> None:
    # `X` included: the plugin registers only `x` unless the settings add `X`.
    assert StatusRegistry().get(symbol) == Status(symbol, "Unknown", "x", "TODO")


def test_custom_statuses_from_the_settings() -> None:
    registry = parse_status_settings(
        settings(
            [entry(" ", "Todo", "/", "TODO"), entry("x", "Done", " ", "DONE")],
            [
                entry("/", "Doing", "x", "IN_PROGRESS"),
                entry("X", "Checked", " ", "DONE"),
                entry("?", "Question", " ", "NON_TASK"),
                entry("w", "Waiting", " ", "ON_HOLD"),
            ],
        )
    )
    assert registry.type_of("X") == "DONE"
    assert registry.type_of("?") == "NON_TASK"
    assert registry.get("w") == Status("w", "Waiting", " ", "ON_HOLD")
    # The user changed the core Todo's next symbol: the update engineer relies on it.
    assert registry.get(" ").next_symbol == "/"
    assert registry.symbols == (" ", "x", "/", "X", "?", "w")


def test_a_vault_that_deleted_the_default_custom_statuses_treats_them_as_unknown() -> None:
    registry = parse_status_settings(
        settings([entry(" ", "Todo", "x", "TODO"), entry("x", "Done", " ", "DONE")], [])
    )
    assert registry.get("-") == Status("-", "Unknown", "x", "TODO")


def test_the_first_status_of_a_symbol_wins() -> None:
    registry = parse_status_settings(
        settings(None, [entry("!", "Important", "x", "TODO"), entry("!", "Later", "x", "DONE")])
    )
    assert registry.get("!").name == "Important"


def test_entries_are_read_as_the_plugin_reads_them() -> None:
    registry = parse_status_settings(
        settings(
            None,
            [
                {"symbol": "a", "name": "Odd type", "nextStatusSymbol": " ", "type": "SOMEDAY"},
                {"symbol": "b", "name": "No next", "type": "IN_PROGRESS"},
                {"symbol": "", "name": "Half edited", "nextStatusSymbol": "x", "type": "DONE"},
            ],
        )
    )
    assert registry.type_of("a") == "TODO"
    assert registry.get("b").next_symbol == "x"
    assert registry.symbols == (" ", "x", "a", "b")  # no coreStatuses: the default ones


def test_settings_without_status_settings_are_the_defaults() -> None:
    assert parse_status_settings('{"globalFilter": "#task"}') == StatusRegistry()


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        '{"statusSettings": "yes"}',
        '{"statusSettings": {"customStatuses": {"symbol": "?"}}}',
        '{"statusSettings": {"coreStatuses": ["x"]}}',
    ],
)
def test_broken_settings_raise(text: str) -> None:
    with pytest.raises(StatusSettingsError):
        parse_status_settings(text)


def test_the_digest_changes_with_the_settings_only() -> None:
    custom = settings(None, [entry("?", "Question", " ", "NON_TASK")])
    assert parse_status_settings(custom).digest == parse_status_settings(custom).digest
    assert parse_status_settings(custom).digest != StatusRegistry().digest
    assert parse_status_settings("{}").digest == StatusRegistry().digest


def test_a_vault_without_the_plugin_has_the_defaults(tmp_path: Path) -> None:
    assert read_status_registry(tmp_path) == (StatusRegistry(), None)


def test_a_vault_with_the_plugin_reads_its_statuses(tmp_path: Path) -> None:
    write_settings(tmp_path, settings(None, [entry("?", "Question", " ", "NON_TASK")]))
    registry, problem = read_status_registry(tmp_path)
    assert (registry.type_of("?"), problem) == ("NON_TASK", None)


def test_a_broken_file_means_defaults_and_a_problem(tmp_path: Path) -> None:
    write_settings(tmp_path, '{"statusSettings": {"customStatuses": ')
    registry, problem = read_status_registry(tmp_path)
    assert registry == StatusRegistry()
    assert problem is not None and SETTINGS_FILE in problem and "broken" in problem
