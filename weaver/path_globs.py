"""Folder globs: which vault paths an access rule (`access` in the settings) lets a client
read or write. Pure: no I/O.

A glob is vault-relative and `/`-separated, as Obsidian shows paths:
- `**` any number of folders (`Projects/**` is everything inside Projects, `**/Drafts/**`
  everything inside a Drafts folder anywhere, `**` the whole vault);
- `*` any characters within one name (`Journal/2026-*.md`), `?` one character;
- a glob without a wildcard names a note or a folder, and everything inside it (`Journal` is
  `Journal` and `Journal/**`); so does one ending in `/`.
Matching ignores case: on macOS and Windows `private/x.md` is `Private/x.md`, and a rule must
not be stepped around by a spelling.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

WILDCARDS = "*?"
EVERYTHING = "**"


def glob_problem(glob: str) -> str | None:
    """Why `glob` cannot be a folder glob, or None."""
    if not glob.strip("/"):
        return "is empty (the whole vault is '**')"
    if "\\" in glob or "\x00" in glob:
        return "has a backslash or NUL (paths are '/'-separated)"
    if re.match(r"^[A-Za-z]:", glob):
        return "is absolute (globs are relative to the vault's root)"
    if ".." in glob.split("/"):
        return "has '..' (globs stay inside the vault)"
    return None


def glob_regex(glob: str) -> str:
    """The regular expression a vault path must match in full to fall under `glob`."""
    problem = glob_problem(glob)
    if problem is not None:
        raise ValueError(f"glob {glob!r} {problem}")
    body = glob.strip("/")
    names_a_folder = glob.endswith("/") or not any(c in body for c in WILDCARDS)
    parts: list[str] = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            parts.append("(?:.*/)?")  # zero or more folders
            i += 3
        elif body.startswith("**", i):
            parts.append(".*")
            i += 2
        elif body[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif body[i] == "?":
            parts.append("[^/]")
            i += 1
        else:
            parts.append(re.escape(body[i]))
            i += 1
    regex = "".join(parts)
    return regex + "(?:/.*)?" if names_a_folder else regex


@dataclass(frozen=True)
class PathGlobs:
    """Some folder globs, matched as one: a path falls under them if it falls under any."""

    globs: tuple[str, ...]
    _pattern: re.Pattern[str] = field(repr=False, compare=False)

    @classmethod
    def of(cls, globs: Sequence[str]) -> PathGlobs:
        """The globs compiled; a bad one raises ValueError naming it and what is wrong."""
        alternatives = "|".join(f"(?:{glob_regex(glob)})" for glob in globs)
        # No glob at all matches nothing (`(?!)`): a rule may deny every write.
        return cls(tuple(globs), re.compile(alternatives or "(?!)", re.IGNORECASE | re.DOTALL))

    @property
    def everything(self) -> bool:
        return EVERYTHING in (glob.strip("/") for glob in self.globs)

    def matches(self, path: str) -> bool:
        parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
        if ".." in parts:  # never inside a folder, whatever the folder's name
            return False
        return self._pattern.fullmatch("/".join(parts)) is not None

    def shown(self) -> str:
        return ", ".join(repr(glob) for glob in self.globs) if self.globs else "none"
