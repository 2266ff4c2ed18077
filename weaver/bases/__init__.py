"""Obsidian Bases' expression language, as its help pages define it: filters and formulas
parsed once (`parse_expression`), then evaluated per row against a file's facts (`evaluate`,
`matches`). Pure logic: the cache, the `.base` files and the tools use it."""

from __future__ import annotations

from weaver.bases.environment import Environment
from weaver.bases.evaluate import Context, evaluate, matches
from weaver.bases.functions import SUPPORTED_FUNCTIONS, UNSUPPORTED_FUNCTIONS
from weaver.bases.syntax import Expression, parse_expression
from weaver.bases.values import Date, Duration, File, FileFacts, Link, Markup, Regex, Value

__all__ = [
    "SUPPORTED_FUNCTIONS",
    "UNSUPPORTED_FUNCTIONS",
    "Context",
    "Date",
    "Duration",
    "Environment",
    "Expression",
    "File",
    "FileFacts",
    "Link",
    "Markup",
    "Regex",
    "Value",
    "evaluate",
    "matches",
    "parse_expression",
]
