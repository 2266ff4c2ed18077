"""Templates and the filters they use.

Jinja2 escapes every value (autoescape). A note's text and properties are rendered by
`note_text`, which escapes everything it takes from the note.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from weaver.dashboard.note_text import render_markdown, render_property


def format_ms(value: int | None) -> str:
    """An epoch-ms time as UTC, to the second; "—" when absent."""
    if value is None:
        return "—"
    return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_duration(value: int | float | None) -> str:
    if value is None:
        return "—"
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 60_000:
        return f"{value / 1000:.1f} s"
    return f"{value / 60_000:.1f} min"


def format_when(value: datetime | None) -> str:
    return "—" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def to_json(value: Any) -> str:
    """Pretty JSON for a <pre> (escaped by the template like any text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def build_templates() -> Environment:
    env = Environment(
        loader=PackageLoader("weaver.dashboard", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["ms"] = format_ms
    env.filters["duration"] = format_duration
    env.filters["when"] = format_when
    env.filters["tojson_pretty"] = to_json
    env.filters["markdown"] = render_markdown
    env.filters["property"] = render_property
    return env
