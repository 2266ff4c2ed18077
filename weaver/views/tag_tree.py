"""Which notes carry each tag, in memory, for questions about several tags at once.

How many notes carry `topic` and `idea` (or either, or any tag `proj*` matches), nested tags
included, is an intersection (or union) of ranges of the tags index: SQLite answers it with a
temporary B-tree over thousands of paths, where the same sets in memory take a small fraction
of that time. `cache.graph.tag_index_cache` keeps a `TagIndex` and patches in
the notes that change, as it does the graph; which keys a pattern matches is still SQL's answer
(`read.tag_pattern_condition` over the kept counts), so the index never holds its own idea of
what `proj*` means.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

TagMode = Literal["any", "all"]


class TagIndex:
    """The notes carrying each tag key exactly (a note under `a/b` is listed under `a/b` only)."""

    def __init__(self, notes_by_key: Mapping[str, Iterable[str]]) -> None:
        paths: dict[str, str] = {}  # one string per path, however many tags the note has
        self._notes = {
            key: frozenset(paths.setdefault(path, path) for path in notes)
            for key, notes in notes_by_key.items()
        }

    def patched(self, changed: Collection[str], tags: Iterable[tuple[str, str]]) -> TagIndex:
        """This index with the notes in `changed` as they are now (`tags`: their (path, key)
        pairs); this one is left as it was, for lookups still using it."""
        changed = set(changed)
        added: dict[str, set[str]] = {}
        for path, key in tags:
            added.setdefault(key, set()).add(path)
        index = TagIndex({})
        index._notes = dict(self._notes)
        for key, notes in self._notes.items():
            if key not in added and not notes.isdisjoint(changed):
                index._notes[key] = notes - changed
        for key, paths in added.items():
            index._notes[key] = (self._notes.get(key, frozenset()) - changed) | paths
        index._notes = {key: notes for key, notes in index._notes.items() if notes}
        return index

    def carrying(self, keys: Iterable[str]) -> set[str]:
        """Notes carrying at least one of these exact keys."""
        return set().union(*(self._notes.get(key, ()) for key in keys))

    def matching(self, key_groups: Sequence[Iterable[str]], mode: TagMode) -> set[str]:
        """Notes matching any (or all) of the groups, a group matching a note carrying one of
        its keys: each group is what one pattern of the query matched."""
        found = [self.carrying(keys) for keys in key_groups]
        if not found:
            return set()
        if mode == "all":
            found.sort(key=len)  # intersecting from the smallest set touches the fewest paths
            return found[0].intersection(*found[1:])
        return set().union(*found)


def first_paths(paths: Iterable[str], limit: int) -> list[str]:
    """The first `limit` paths in SQLite's order (code points, as UTF-8 bytes compare)."""
    return heapq.nsmallest(limit, paths)
