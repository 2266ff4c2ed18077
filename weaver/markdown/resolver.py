"""Resolve link targets to vault paths the way Obsidian does (VAULT_SEMANTICS, "Resolution").

Pure and in memory: the indexer feeds a LinkResolver every file path of the vault (notes and
attachments) and keeps it current with add/remove. Lookups go through a dict keyed by file name
(link_key / path_key), so each costs time proportional to the few files sharing that name.

Order of preference for a target, checked against tasks-demo's resolvedLinks.json:
1. "" is a self-link: the linking note itself.
2. `./` or `../` targets are made root-relative from the linking note's folder first.
3. An exact path from the vault root, case-insensitively.
4. Files whose path ends with the target at a path-component boundary ("sub/C" finds "a/sub/C.md"
   but "b/C" does not find "ab/C.md"): one in the linking note's folder, else the shortest path,
   ties broken by path order.
At steps 3 and 4 the target is tried first as written and then with ".md" appended, which is how
Obsidian treats extensions: "Note" and "Note.md" find "Note.md", "img.png" finds "img.png", and a
dotted name such as "v1.2" still finds the note "v1.2.md".
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["LinkResolver", "link_key", "path_key"]

_MD_SUFFIX = re.compile(r"\.md$")


def _fold(text: str) -> str:
    """Case-insensitive form; NFC first so macOS's decomposed file names match typed links."""
    return unicodedata.normalize("NFC", text).casefold()


@lru_cache(maxsize=1 << 16)
def link_key(target: str) -> str:
    """The lookup key of a link target: last path component, casefolded, without '.md'."""
    return _MD_SUFFIX.sub("", _fold(target.rsplit("/", 1)[-1]))


def path_key(path: str) -> str:
    """The key under which links find a vault file: 'Folder/My Note.md' -> 'my note'."""
    return link_key(path)


def _candidates(folded: str) -> tuple[str, ...]:
    """The folded target as written, then with '.md' appended (unless it already has it)."""
    return (folded,) if folded.endswith(".md") else (folded, folded + ".md")


def _rooted(target: str, source_path: str) -> str | None:
    """target as a path from the vault root; None when `..` climbs out of the vault."""
    if not target.startswith(("./", "../")):
        return target.lstrip("/")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source_path), target))
    return None if joined == ".." or joined.startswith("../") else joined


class LinkResolver:
    """An in-memory index of every file path in a vault, answering resolve(target, source).

    Answers that do not depend on the linking note (most: a name that only one file has) are
    remembered until the next add or remove, so a vault's thousand links to one hub cost one
    lookup."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._by_key: dict[str, dict[str, str]] = {}  # path_key -> {path: folded path}
        self._by_folded: dict[str, set[str]] = {}  # folded path -> paths (case variants)
        self._known: dict[str, str | None] = {}  # target -> its path, from any source
        for path in paths:
            self.add(path)

    def add(self, path: str) -> None:
        self._by_key.setdefault(path_key(path), {})[path] = _fold(path)
        self._by_folded.setdefault(_fold(path), set()).add(path)
        self._known.clear()

    def remove(self, path: str) -> None:
        if path not in self:
            return
        key, folded = path_key(path), _fold(path)
        del self._by_key[key][path]
        self._by_folded[folded].discard(path)
        if not self._by_key[key]:
            del self._by_key[key]
        if not self._by_folded[folded]:
            del self._by_folded[folded]
        self._known.clear()

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and path in self._by_key.get(path_key(path), {})

    def spellings(self, path: str, folder: bool = False) -> set[str]:
        """The paths held that are `path` spelled in another case (or, with `folder`, below
        the folder `path` so spelled): the names one file had before a file system that folds
        case renamed it. A folder costs a look at every path; a file, one lookup."""
        folded = _fold(path)
        found = set(self._by_folded.get(folded, ()))
        if folder:
            prefix = folded + "/"
            found.update(
                p for key, ps in self._by_folded.items() if key.startswith(prefix) for p in ps
            )
        return found

    def __len__(self) -> int:
        return sum(len(paths) for paths in self._by_key.values())

    def resolve(self, target: str, source_path: str) -> str | None:
        """The vault path target points to from source_path, or None if it is unresolved."""
        if target in self._known:
            return self._known[target]
        if target == "":
            return source_path
        rooted = _rooted(target, source_path)
        if not rooted:
            return None
        folded = _fold(rooted)
        for candidate in _candidates(folded):
            if exact := self._by_folded.get(candidate):
                return self._remember(target, min(exact))
        hits = self._suffix_hits(folded)
        if len(hits) > 1:  # the one in the linking note's folder, else the shortest path
            folder = posixpath.dirname(source_path)
            nearby = [path for path in hits if posixpath.dirname(path) == folder]
            return min(nearby or hits, key=lambda path: (len(path), path))
        return self._remember(target, hits[0] if hits else None)

    def _suffix_hits(self, folded: str) -> list[str]:
        files = self._by_key.get(_MD_SUFFIX.sub("", folded.rsplit("/", 1)[-1]))
        if not files:
            return []
        for candidate in _candidates(folded):
            suffix = "/" + candidate
            if hits := [path for path, key in files.items() if key.endswith(suffix)]:
                return hits
        return []

    def _remember(self, target: str, resolved: str | None) -> str | None:
        if not target.startswith("."):  # "./x" and "../x" depend on the linking note's folder
            self._known[target] = resolved
        return resolved
