"""Resolve names a person or a model typed to notes: exactly, or fuzzily for typos. Pure.

A note answers to its title, its file name without `.md`, its path without `.md`, and each of
its aliases (aliases never make a link resolve, but they are how people name notes). Names and
keys compare after Unicode NFC and case folding, with surrounding space, `[[`/`]]`, a `|alias`
or `#heading` part and a `.md` suffix removed, so `[[Some Note|x]]` finds "Some Note".

When several notes match equally, the winner is chosen the way Obsidian picks a link target
(path match first, then file name, title, alias; then the shortest path, then path order) and
the others are listed as alternatives, so an ambiguous name is never silently half-answered.
Fuzzy scores are rapidfuzz's normalised Indel similarity (`fuzz.ratio`, 0-1), the character
analogue of the Dice coefficient the reference server uses: "chikken" scores 0.86 against
"chicken". A `NameIndex` folds every key once; `cache.graph.names_cache` keeps it, patching in
the notes that change, so a call costs the lookups only.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rapidfuzz import fuzz, process

if TYPE_CHECKING:  # imported where fuzzy matching scores: not to start a server
    import numpy as np

MatchedOn = Literal["path", "name", "title", "alias", "meaning"]
Strategy = Literal["exact", "fuzzy", "semantic"]
_PREFERENCE: dict[MatchedOn, int] = {"path": 0, "name": 1, "title": 2, "alias": 3, "meaning": 4}
# Fuzzy candidates looked at per name before grouping them by note.
_FUZZY_POOL = 25
# Names scored per `cdist`: its matrix of float64 scores is this many rows of every key in
# reach, which bounds its memory on a big vault.
_CDIST_NAMES = 16
MAX_ALTERNATIVES = 5
_MD = re.compile(r"\.md$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class NameRow:
    """A note as names see it."""

    path: str
    title: str
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NameMatch:
    name: str
    path: str | None  # None: nothing matched (well enough)
    title: str | None
    matched_on: MatchedOn | None
    matched_text: str | None  # the title, file name, path or alias that matched
    score: float  # 1.0 for an exact match, 0.0 for none
    alternatives: tuple[str, ...]  # other notes that matched, best first


@dataclass(frozen=True, slots=True)
class _Key:
    folded: str
    text: str
    kind: MatchedOn
    row: NameRow


def fold(text: str) -> str:
    """The comparison form of a name (see the module docstring)."""
    text = text.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2]
    text = text.removeprefix("!").split("|", 1)[0].split("#", 1)[0]
    return _MD.sub("", unicodedata.normalize("NFC", text).strip()).casefold()


class NameIndex:
    """The folded names of a set of notes, for exact and fuzzy lookups."""

    def __init__(self, rows: Iterable[NameRow]) -> None:
        self.keys = sorted((key for row in rows for key in _keys(row)), key=_order)
        self.by_folded: dict[str, list[_Key]] = {}
        self.by_path: dict[str, list[_Key]] = {}
        for key in self.keys:
            self.by_folded.setdefault(key.folded, []).append(key)
            self.by_path.setdefault(key.row.path, []).append(key)
        self.choices = [key.folded for key in self.keys]
        self.lengths = [len(choice) for choice in self.choices]

    def patched(self, changed: Collection[str], rows: Iterable[NameRow]) -> NameIndex:
        """This index with the notes in `changed` as they are now (`rows`: those that exist);
        this one is left as it was, for lookups still using it. Copies of the lists and maps
        (in C), then each key of those notes out and in by bisection: a small fraction of the
        time folding every name again takes."""
        index = NameIndex(())
        index.keys, index.choices, index.lengths = [*self.keys], [*self.choices], [*self.lengths]
        # `.copy()` clones the tables whole even after deletions, which `dict()` does not (it
        # re-inserts every key once a patch has removed one).
        index.by_folded, index.by_path = self.by_folded.copy(), self.by_path.copy()
        for path in changed:
            for key in index.by_path.pop(path, ()):
                index._remove(key)
        for row in rows:
            for key in _keys(row):
                index._add(key)
        return index

    def _remove(self, key: _Key) -> None:
        at = bisect_left(self.keys, _order(key), key=_order)
        del self.keys[at], self.choices[at], self.lengths[at]
        same = [k for k in self.by_folded[key.folded] if k is not key]
        if same:
            self.by_folded[key.folded] = same
        else:
            del self.by_folded[key.folded]

    def _add(self, key: _Key) -> None:
        """Lists shared with the index this one was patched from are replaced, not changed."""
        at = bisect_left(self.keys, _order(key), key=_order)
        self.keys.insert(at, key)
        self.choices.insert(at, key.folded)
        self.lengths.insert(at, len(key.folded))
        self.by_folded[key.folded] = sorted((*self.by_folded.get(key.folded, ()), key), key=_order)
        self.by_path[key.row.path] = [*self.by_path.get(key.row.path, ()), key]

    def resolve(
        self,
        names: Sequence[str],
        strategy: Strategy = "fuzzy",
        threshold: float = 0.7,
        within: Collection[str] | None = None,
        kinds: Collection[MatchedOn] | None = None,
    ) -> list[NameMatch]:
        """One `NameMatch` per name, in order. `threshold` (0-1) applies to fuzzy scores only;
        `within` limits the candidates to these note paths, `kinds` fuzzy matches to these
        kinds of name."""
        if strategy == "exact":
            return [self._exact(name, within) for name in names]
        keys, choices, lengths = self.keys, self.choices, self.lengths
        if within is not None or kinds is not None:
            keys = [
                key
                for key in self.keys
                if (within is None or key.row.path in within)
                and (kinds is None or key.kind in kinds)
            ]
            choices = [key.folded for key in keys]
            lengths = [len(choice) for choice in choices]
        return _fuzzy(names, keys, choices, lengths, threshold)

    def _exact(self, name: str, within: Collection[str] | None) -> NameMatch:
        keys = self.by_folded.get(fold(name), [])
        return _answer(name, [(1.0, k) for k in keys if within is None or k.row.path in within])


def resolve_names(
    names: Sequence[str],
    rows: Iterable[NameRow],
    strategy: Strategy = "fuzzy",
    threshold: float = 0.7,
) -> list[NameMatch]:
    """`NameIndex(rows).resolve(...)`, for a one-off lookup."""
    return NameIndex(rows).resolve(names, strategy, threshold)


def _order(key: _Key) -> tuple[int, str, str]:
    """How keys are kept: by length for `length_window`, then text and path, one order however
    the index came about, so that ties among fuzzy scores always fall the same way."""
    return len(key.folded), key.folded, key.row.path


def _keys(row: NameRow) -> Iterable[_Key]:
    name = row.path.rsplit("/", 1)[-1]
    texts: list[tuple[str, MatchedOn]] = [
        (_MD.sub("", row.path), "path"),
        (_MD.sub("", name), "name"),
        (row.title, "title"),
        *((alias, "alias") for alias in row.aliases),
    ]
    seen: set[str] = set()
    for text, kind in texts:
        folded = fold(text)
        if folded and folded not in seen:  # a note whose title is its name: one key
            seen.add(folded)
            yield _Key(folded, text, kind, row)


def _fuzzy(
    names: Sequence[str],
    keys: Sequence[_Key],
    choices: Sequence[str],
    lengths: Sequence[int],
    threshold: float,
) -> list[NameMatch]:
    """`keys` sorted by the length of their folded text; `choices` those texts, `lengths`
    their lengths.

    One `cdist` scores every name against the keys of a length any of them can reach: it
    converts each key once for all the names and compares several names per instruction (SIMD),
    where a lookup per name costs several times as much."""
    import numpy as np

    found: list[NameMatch] = []
    for start in range(0, len(names), _CDIST_NAMES):  # bounds the score matrix's memory
        batch = names[start : start + _CDIST_NAMES]
        queries = [fold(name) for name in batch]
        asked = [query for query in queries if query]
        if not asked:
            found += [_answer(name, []) for name in batch]
            continue
        windows = [length_window(len(query), lengths, threshold) for query in asked]
        low, high = min(w[0] for w in windows), max(w[1] for w in windows)
        cutoff = threshold * 100
        scores = process.cdist(
            asked, choices[low:high], scorer=fuzz.ratio, score_cutoff=cutoff, dtype=np.float64
        )
        rows = iter(scores)
        found += [
            _answer(name, _best(next(rows), keys, low, threshold) if query else [])
            for name, query in zip(batch, queries, strict=True)
        ]
    return found


def _best(
    row: np.ndarray[Any, np.dtype[np.float64]], keys: Sequence[_Key], low: int, threshold: float
) -> list[tuple[float, _Key]]:
    """The `_FUZZY_POOL` best-scoring keys of one name's row of scores (ties: shorter first,
    as the keys are sorted), each with its 0-1 score; cdist leaves 0 below the cutoff."""
    import numpy as np

    found = np.arange(len(row)) if threshold <= 0 else np.flatnonzero(row >= threshold * 100)
    ranked = found[np.lexsort((found, -row[found]))][:_FUZZY_POOL]
    return [(round(float(row[i]) / 100, 4), keys[low + int(i)]) for i in ranked]


def length_window(size: int, lengths: Sequence[int], threshold: float) -> tuple[int, int]:
    """The slice of `lengths` (sorted) whose texts can score `threshold` against a text of
    `size` characters. The ratio is 2 * common / (a + b), at most 2 * min(a, b) / (a + b), so
    b must lie within [a * t / (2 - t), a * (2 - t) / t]: at 0.7, between 0.54 and 1.86 times
    the query's length. Handing rapidfuzz only those halves the time of a lookup (it converts
    every text it is given, whether it could match or not)."""
    if threshold <= 0:
        return 0, len(lengths)
    margin = 1e-9  # the bounds are exact; keep float rounding from cutting one off
    low = bisect_left(lengths, size * threshold / (2 - threshold) - margin)
    high = bisect_right(lengths, size * (2 - threshold) / threshold + margin)
    return low, high


def _rank(key: _Key) -> tuple[int, int, str]:
    return (_PREFERENCE[key.kind], len(key.row.path), key.row.path)


def _answer(name: str, scored: Sequence[tuple[float, _Key]]) -> NameMatch:
    """Best key per note; the best note first (score, then Obsidian's preference)."""
    best: dict[str, tuple[float, _Key]] = {}
    for score, key in sorted(scored, key=lambda item: (-item[0], _rank(item[1]))):
        best.setdefault(key.row.path, (score, key))
    if not best:
        return NameMatch(name, None, None, None, None, 0.0, ())
    ordered = sorted(best.values(), key=lambda item: (-item[0], _rank(item[1])))
    score, key = ordered[0]
    others = tuple(k.row.path for _, k in ordered[1 : 1 + MAX_ALTERNATIVES])
    return NameMatch(name, key.row.path, key.row.title, key.kind, key.text, score, others)
