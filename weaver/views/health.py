"""What is wrong with the vault's links, read off the link graph (`views.link_graph.Graph`, kept per
cache version): broken link targets with the notes holding them, orphans, and file names several
notes share (which make `[[name]]` ambiguous). Pure; each list in pages with its total.

The graph already holds every note's path, its links to other notes and its broken links (the
raw target text), so these cost a pass over it (a few ms at 10,000 notes) where the same in SQL
reads tens of thousands of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from weaver.views.link_graph import Graph

# Notes named per broken target or shared name; the totals say how many more there are.
SHOWN = 20


@dataclass(frozen=True, slots=True)
class BrokenTarget:
    """A link target no note or attachment answers to, and the notes linking to it."""

    target: str
    sources: tuple[str, ...]  # sorted, at most SHOWN
    source_total: int


@dataclass(frozen=True, slots=True)
class SharedName:
    """A file name (case-folded) carried by several notes."""

    name: str
    paths: tuple[str, ...]  # sorted, at most SHOWN
    total: int


def broken_targets(graph: Graph) -> list[BrokenTarget]:
    """Broken link targets, those linked from the most notes first (ties by target)."""
    holders: dict[str, list[str]] = {}
    for source, target in graph.broken:
        holders.setdefault(target, []).append(source)
    ranked = sorted(holders, key=lambda target: (-len(holders[target]), target))
    found = []
    for target in ranked:
        sources = sorted(holders[target])
        found.append(BrokenTarget(target, tuple(sources[:SHOWN]), len(sources)))
    return found


def orphans(graph: Graph) -> list[str]:
    """Notes with no link to or from another note (links to attachments, broken links and
    links to themselves do not count), by path."""
    return sorted(p for p in graph.nodes if p not in graph.out and p not in graph.inc)


def shared_names(graph: Graph) -> list[SharedName]:
    """File names (case-folded) that notes in different folders share, by name."""
    by_name: dict[str, list[str]] = {}
    for path in graph.nodes:
        by_name.setdefault(path.rpartition("/")[2].casefold(), []).append(path)
    shared = sorted(name for name, paths in by_name.items() if len(paths) > 1)
    found = []
    for name in shared:
        paths = sorted(by_name[name])
        found.append(SharedName(name, tuple(paths[:SHOWN]), len(paths)))
    return found
