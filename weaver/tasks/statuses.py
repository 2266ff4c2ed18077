"""The Tasks plugin's statuses: what the character between a task's brackets means.

A status is a symbol (`x`), a name (`Done`), the symbol the task moves to when toggled
(`nextStatusSymbol`) and a type (`DONE`). The plugin starts with four: `space` Todo and `x`
Done (its "core" statuses), `/` In Progress and `-` Cancelled (its default custom ones). A vault
can rename them, change their next symbol or type, and add more, in
`.obsidian/plugins/obsidian-tasks-plugin/data.json` under `statusSettings` (`coreStatuses` then
`customStatuses`, lists of `{symbol, name, nextStatusSymbol, type}`).

A symbol no status declares is the plugin's "Unknown" status: type TODO, next symbol `x`; that
includes `X`, which the plugin does not register unless the settings do (it then behaves as any
other unknown symbol in its queries, even though Obsidian draws it checked).

`parse_status_settings` is pure; `read_status_registry` reads the file and reports a broken one
as a problem instead of failing, since a vault must stay indexable whatever the plugin wrote.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, get_args

from weaver.errors import ConfigError
from weaver.markdown.tasks import StatusType

__all__ = [
    "DEFAULT_STATUSES",
    "SETTINGS_FILE",
    "Status",
    "StatusRegistry",
    "StatusSettingsError",
    "parse_status_settings",
    "read_status_registry",
]

SETTINGS_FILE = ".obsidian/plugins/obsidian-tasks-plugin/data.json"
_TYPES: frozenset[str] = frozenset(get_args(StatusType))


@dataclass(frozen=True, slots=True)
class Status:
    symbol: str  # the single character between the brackets
    name: str
    next_symbol: str  # what toggling the task writes between the brackets
    type: StatusType


DEFAULT_STATUSES = (
    Status(" ", "Todo", "x", "TODO"),
    Status("x", "Done", " ", "DONE"),
    Status("/", "In Progress", "x", "IN_PROGRESS"),
    Status("-", "Cancelled", " ", "CANCELLED"),
)


class StatusSettingsError(ConfigError):
    """The plugin's settings file is not JSON, or its `statusSettings` has the wrong shape."""


@dataclass(frozen=True, slots=True)
class StatusRegistry:
    """The vault's statuses by symbol. `digest` names the configuration, so that a cache can
    tell whether the labels it stored were made under the same settings."""

    statuses: tuple[Status, ...] = DEFAULT_STATUSES
    unknown_type: ClassVar[StatusType] = "TODO"  # of a symbol no status declares
    _by_symbol: dict[str, Status] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_symbol: dict[str, Status] = {}
        for status in self.statuses:
            # The plugin keeps the first status of a symbol and ignores later duplicates.
            by_symbol.setdefault(status.symbol, status)
        object.__setattr__(self, "_by_symbol", by_symbol)

    def get(self, symbol: str) -> Status:
        """The status of `symbol`; the plugin's "Unknown" status when none declares it."""
        known = self._by_symbol.get(symbol)
        return known if known is not None else Status(symbol, "Unknown", "x", self.unknown_type)

    def type_of(self, symbol: str) -> StatusType:
        return self.get(symbol).type

    @property
    def symbols(self) -> tuple[str, ...]:
        """The declared symbols, each once, in the order the settings give them."""
        return tuple(self._by_symbol)

    @property
    def digest(self) -> str:
        text = json.dumps([[s.symbol, s.name, s.next_symbol, s.type] for s in self.statuses])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_status_settings(text: str) -> StatusRegistry:
    """The registry the plugin builds from its `data.json` text. No `statusSettings` (the
    user never opened that part of the settings) means the defaults.

    Raises StatusSettingsError when the text is not JSON or the lists are not lists of objects.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StatusSettingsError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise StatusSettingsError("not a JSON object")
    settings = data.get("statusSettings")
    if settings is None:
        return StatusRegistry()
    if not isinstance(settings, dict):
        raise StatusSettingsError("statusSettings is not an object")
    # A list the file leaves out is the plugin's default for it (an empty one is kept empty).
    core = _statuses(settings.get("coreStatuses"), "coreStatuses", DEFAULT_STATUSES[:2])
    custom = _statuses(settings.get("customStatuses"), "customStatuses", DEFAULT_STATUSES[2:])
    return StatusRegistry((*core, *custom))


def _statuses(entries: Any, key: str, default: tuple[Status, ...]) -> list[Status]:
    if entries is None:
        return list(default)
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise StatusSettingsError(f"statusSettings.{key} is not a list of statuses")
    return [status for entry in entries if (status := _status(entry)) is not None]


def _status(entry: dict[str, Any]) -> Status | None:
    symbol = entry.get("symbol")
    # A status being edited in the plugin's dialog can be saved without a symbol: it matches
    # no task, so it is left out rather than failing the whole file.
    if not isinstance(symbol, str) or len(symbol) != 1:
        return None
    name = entry.get("name")
    next_symbol = entry.get("nextStatusSymbol")
    raw_type = entry.get("type")
    # As the plugin: an unrecognised type reads as TODO, a missing next symbol as `x`.
    status_type: StatusType = raw_type if raw_type in _TYPES else "TODO"
    return Status(
        symbol,
        name if isinstance(name, str) else "",
        next_symbol if isinstance(next_symbol, str) and next_symbol else "x",
        status_type,
    )


def read_status_registry(vault_root: Path) -> tuple[StatusRegistry, str | None]:
    """The vault's registry and, when the settings file is unreadable or broken, a sentence
    saying so (the defaults are then used). A missing file is no problem: the defaults."""
    path = vault_root / SETTINGS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return StatusRegistry(), None
    except (OSError, UnicodeDecodeError) as exc:
        return StatusRegistry(), f"{SETTINGS_FILE} could not be read ({exc}); default statuses"
    try:
        return parse_status_settings(text), None
    except StatusSettingsError as exc:
        return StatusRegistry(), f"{SETTINGS_FILE} is broken ({exc}); default statuses used"
