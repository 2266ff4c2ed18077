"""Templates and the filters they use; notes rendered as markdown with no way to run script.

Jinja2 escapes every value (autoescape). Note text goes through markdown-it with raw HTML
turned off: a `<script>` or `<img onerror=...>` in a note comes out as text; markdown-it's
link check drops `javascript:`, `vbscript:`, `file:` and `data:` URLs. The Content-Security-
Policy (see `security`) forbids inline script besides.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

# html: False is the point; linkify needs an extra package, and typographer changes the text.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")


def render_markdown(text: str) -> Markup:
    """Safe HTML for a note's text (markdown-it escapes what it does not turn into markup)."""
    # Markup: markdown-it with html disabled escapes every character of the note it keeps.
    return Markup(_MARKDOWN.render(text))


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
    return env
