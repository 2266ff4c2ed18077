"""Values found by how they start, ignoring case: the note paths and folders that completions
offer as a person types. Pure.

A `PrefixIndex` keeps its values sorted by their case-folded form, so the values starting with
what was typed are one binary search and a short walk away, however many there are, where
SQLite scans every path to compare ignoring case. `cache.graph` keeps one per cache
version and patches in the notes that change.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable


class PrefixIndex:
    """`values`, each found by any case-folded prefix of it."""

    def __init__(self, values: Iterable[str]) -> None:
        ordered = sorted({(value.casefold(), value) for value in values})
        # Two lists, not a tuple per value: 100,000 tuples kept for the process's life would be
        # that many more objects for every full garbage collection to visit.
        self.folded: list[str] = [folded for folded, _ in ordered]
        self.values: list[str] = [value for _, value in ordered]

    def __len__(self) -> int:
        return len(self.values)

    def starting(self, prefix: str, limit: int) -> tuple[list[str], bool]:
        """Up to `limit` values starting with `prefix` ignoring case, in case-folded order;
        and whether more do."""
        typed = prefix.casefold()
        found: list[str] = []
        at = bisect_left(self.folded, typed)
        while at < len(self.folded) and len(found) <= limit:
            if not self.folded[at].startswith(typed):
                break
            found.append(self.values[at])
            at += 1
        return found[:limit], len(found) > limit

    def patched(self, removed: Collection[str], added: Iterable[str]) -> PrefixIndex:
        """A copy without `removed` and with `added` (a value in both is kept): in time
        proportional to the changes, each a binary search and a move of the lists' tails."""
        index = PrefixIndex(())
        index.folded, index.values = self.folded.copy(), self.values.copy()
        for value in removed:
            index._remove(value)
        for value in added:
            index._add(value)
        return index

    def _remove(self, value: str) -> None:
        at = bisect_left(self.folded, value.casefold())
        while at < len(self.folded) and self.folded[at] == value.casefold():
            if self.values[at] == value:
                del self.folded[at], self.values[at]
                return
            at += 1

    def _add(self, value: str) -> None:
        folded = value.casefold()
        at = bisect_left(self.folded, folded)
        while at < len(self.folded) and self.folded[at] == folded:
            if self.values[at] == value:
                return  # present already
            if self.values[at] > value:
                break
            at += 1
        self.folded.insert(at, folded)
        self.values.insert(at, value)
