"""`PrefixIndex`: values by a prefix ignoring case, and patched copies equal to fresh ones."""

from __future__ import annotations

from weaver.views.prefixes import PrefixIndex

PATHS = ["Zeta.md", "alpha/One.md", "Alpha/two.md", "alpha/three.md", "Ärger.md", "b.md"]


def test_values_starting_with_a_prefix_ignoring_case() -> None:
    index = PrefixIndex(PATHS)
    assert index.starting("ALPHA/", 10) == (
        ["alpha/One.md", "alpha/three.md", "Alpha/two.md"],
        False,
    )
    assert index.starting("alpha/t", 10) == (["alpha/three.md", "Alpha/two.md"], False)
    assert index.starting("ä", 10) == (["Ärger.md"], False)
    assert index.starting("", 2) == (["alpha/One.md", "alpha/three.md"], True)
    assert index.starting("alpha/", 3) == (
        ["alpha/One.md", "alpha/three.md", "Alpha/two.md"],
        False,
    )
    assert index.starting("alpha/", 2)[1] is True
    assert index.starting("nothing", 10) == ([], False)
    assert len(PrefixIndex([*PATHS, "b.md"])) == len(PATHS)  # each value once


def test_a_patched_index_is_the_index_built_afresh() -> None:
    index = PrefixIndex(PATHS)
    patched = index.patched(
        ["alpha/One.md", "b.md", "Zeta.md", "missing.md"], ["ALPHA/one.md", "Zeta.md", "c.md"]
    )
    fresh = PrefixIndex(
        ["ALPHA/one.md", "Alpha/two.md", "alpha/three.md", "Ärger.md", "Zeta.md", "c.md"]
    )
    assert (patched.folded, patched.values) == (fresh.folded, fresh.values)
    assert index.values == PrefixIndex(PATHS).values  # the original left as it was
    assert patched.patched([], ["c.md"]).values == patched.values  # present: not twice
