"""The groups of MCP tools a user chooses which to serve by (docs/tools.md lists their tools).

A module of its own, below the settings, so that the command line can name them in its help
without importing the settings' model (pydantic) to do so."""

from __future__ import annotations

from typing import Literal, get_args

Toolset = Literal[
    "notes",
    "search",
    "graph",
    "tags",
    "tasks",
    "canvas",
    "bases",
    "periodic",
    "attachments",
    "edit",
    "workflows",
    "records",
    "system",
]
TOOLSETS: tuple[Toolset, ...] = get_args(Toolset)
# Reading, finding and writing notes: what most assistants are asked to do, within the
# tool-list budget (docs/tools.md, "Toolsets").
DEFAULT_TOOLSETS: tuple[Toolset, ...] = ("notes", "search", "edit")
ALL_TOOLSETS = "all"
