"""The whole help of one tool, served as the resource `weaver://help/{tool}` (markdown).

tools/list carries a tool's first paragraph only, and output schemas without descriptions:
clients put that list into the model's context on every turn. What a tool does in detail, its
examples, every argument and every field of its result are here, read when needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from weaver.mcp_server.catalog import ToolSpec
from weaver.mcp_server.envelope import EnvelopeTool, unwrap

HELP_PREFIX = "weaver://help/"
HELP_TEMPLATE = HELP_PREFIX + "{tool}"
# How deep the result's fields are listed: deeper parts are rare and named by their type.
RESULT_DEPTH = 3


def help_uri(name: str) -> str:
    return HELP_PREFIX + quote(name, safe="")


def help_name(uri: str) -> str | None:
    """The tool a help URI names, or None for another URI."""
    return unquote(uri.removeprefix(HELP_PREFIX)) if uri.startswith(HELP_PREFIX) else None


@dataclass(frozen=True)
class ToolHelp:
    """Every tool's help, by name, rendered when read: the tools of a server, served or not
    (`withheld`: why not, by name). `tools` holds the served tools; a withheld one is bound by
    `bind` when its help is first read: binding builds a tool's schemas, which a server that
    does not serve it need not pay for at its start."""

    specs: Mapping[str, ToolSpec]
    tools: Mapping[str, EnvelopeTool]
    withheld: Mapping[str, str]
    bind: Callable[[str], EnvelopeTool]
    # Several vaults: what the `vault` argument takes, by tool (`VaultRouting.help`).
    vaults: Callable[[str], str] | None = None

    @property
    def names(self) -> list[str]:
        return list(self.specs)

    def read(self, name: str) -> str | None:
        """The help of the tool so named, or None when there is none."""
        spec = self.specs.get(name)
        if spec is None:
            return None
        tool = self.tools.get(name) or self.bind(name)
        text = render_help(spec, tool, self.withheld.get(name))
        if self.vaults is None or name not in self.tools:  # a withheld tool takes no vault
            return text
        return f"{text}\n## Vaults\n\n{self.vaults(name)}\n"


def render_help(spec: ToolSpec, tool: EnvelopeTool, withheld: str | None) -> str:
    """`withheld`: why this server does not serve the tool, or None when it does."""
    kind = "reads only" if not spec.writes else "changes the vault"
    lines = [f"# {spec.name}: {spec.title}", "", f"Toolset: {spec.toolset}; it {kind}."]
    if withheld is not None:
        lines += ["", f"Not callable here: {withheld}"]
    lines += ["", unwrap(spec.help), "", "## Arguments", ""]
    lines += list(_arguments(tool.parameters)) or ["None."]
    if tool.result_schema is not None:
        data = tool.result_schema.get("properties", {}).get("data", {})
        defs = tool.result_schema.get("$defs", {})
        lines += ["", "## Result", "", "`data`, in the envelope {success, data | error, metadata}:"]
        lines += ["", *_fields(data, defs, 0)]
    return "\n".join(lines) + "\n"


def _arguments(schema: dict[str, Any]) -> Iterator[str]:
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        facts = [_type(prop, schema.get("$defs", {}))]
        if name in required:
            facts.append("required")
        elif "default" in prop:
            facts.append(f"default {_json(prop['default'])}")
        yield f"- `{name}` ({'; '.join(facts)}){_described(prop)}"


def _fields(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> Iterator[str]:
    schema = _resolved(schema, defs)
    if schema.get("type") in ("array", ["array", "null"]):
        schema = _resolved(schema.get("items", {}), defs)
    for name, prop in schema.get("properties", {}).items():
        yield f"{'  ' * depth}- `{name}` ({_type(prop, defs)}){_described(prop)}"
        if depth + 1 < RESULT_DEPTH and "$ref" not in prop:  # a shared model, listed once
            yield from _fields(prop, defs, depth + 1)


def _resolved(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return dict(defs.get(ref.removeprefix("#/$defs/"), {}))
    return schema


def _type(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).removeprefix("#/$defs/")
    if "enum" in schema:
        return "one of " + ", ".join(_json(value) for value in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_type(option, defs) for option in schema["anyOf"])
    kinds = schema.get("type", "any")
    named = [kinds] if isinstance(kinds, str) else list(kinds)
    if "array" in named and "items" in schema:
        named[named.index("array")] = f"array of {_type(schema['items'], defs)}"
    return " or ".join(named)


def _described(schema: dict[str, Any]) -> str:
    description = schema.get("description")
    return f": {' '.join(str(description).split())}" if description else ""


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
