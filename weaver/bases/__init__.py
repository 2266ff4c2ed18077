"""Obsidian Bases' expression language, as its help pages define it: filters and formulas
parsed and compiled once (`compile_expression`), then evaluated per row against a file's facts
(`evaluate`, `matches`). Pure logic: the cache, the `.base` files and the tools use it."""

from __future__ import annotations

from weaver.bases.compiler import Program, compile_expression
from weaver.bases.environment import Environment
from weaver.bases.evaluate import Context, evaluate, matches
from weaver.bases.functions import SUPPORTED_FUNCTIONS, UNSUPPORTED_FUNCTIONS
from weaver.bases.values import Date, Duration, File, FileFacts, Link, Markup, Regex, Value

__all__ = [
    "SUPPORTED_FUNCTIONS",
    "UNSUPPORTED_FUNCTIONS",
    "Context",
    "Date",
    "Duration",
    "Environment",
    "File",
    "FileFacts",
    "Link",
    "Markup",
    "Program",
    "Regex",
    "Value",
    "compile_expression",
    "evaluate",
    "matches",
]
