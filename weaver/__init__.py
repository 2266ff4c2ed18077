"""Weaver: a shadow cache of a markdown vault, served over MCP, with a workflow engine."""

from __future__ import annotations

__version__ = "0.2.0"
