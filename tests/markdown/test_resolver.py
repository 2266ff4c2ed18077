"""weaver.markdown.resolver: the resolution rules of VAULT_SEMANTICS, one table each."""

from __future__ import annotations

import pytest

from weaver.markdown.resolver import LinkResolver, link_key, path_key

VAULT = [
    "Home.md",
    "Note.md",
    "a/Note.md",
    "a/sub/C.md",
    "ab/C.md",
    "b/Deep/Note.md",
    "x/Dup.md",
    "y/Dup.md",
    "img.png",
    "assets/Pic.PNG",
    "docs/v1.2.md",
    "docs/Report.pdf",
    "docs/Report.pdf.md",
    "Café.md",
    "Only Here.md",
    "Straße.md",
]


@pytest.fixture
def resolver() -> LinkResolver:
    return LinkResolver(VAULT)


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("Note", "note"),
        ("Note.md", "note"),
        ("note.MD", "note"),
        ("Folder/My Note", "my note"),
        ("img/Pic.PNG", "pic.png"),
        ("", ""),
        ("a.md.md", "a.md"),
    ],
)
def test_link_key(target: str, key: str) -> None:
    assert link_key(target) == key


@pytest.mark.parametrize(
    ("path", "key"), [("Folder/My Note.md", "my note"), ("img/Pic.PNG", "pic.png"), ("A.MD", "a")]
)
def test_path_key(path: str, key: str) -> None:
    assert path_key(path) == key


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        # A self-link resolves to the linking note.
        ("", "a/sub/C.md", "a/sub/C.md"),
        # Case-insensitive; ".md" assumed; an extension matched in any case.
        ("home", "x/Dup.md", "Home.md"),
        ("HOME.md", "x/Dup.md", "Home.md"),
        ("Home.MD", "x/Dup.md", "Home.md"),
        ("img.png", "Home.md", "img.png"),
        ("IMG.PNG", "Home.md", "img.png"),
        ("pic.png", "Home.md", "assets/Pic.PNG"),
        ("v1.2", "Home.md", "docs/v1.2.md"),  # a dot is not an extension when nothing matches
        ("Report.pdf", "Home.md", "docs/Report.pdf"),  # the file as written wins over ".md"
        ("café", "Home.md", "Café.md"),
        ("STRASSE", "Home.md", "Straße.md"),  # casefolded, not just lowercased
        ("Cafe\u0301", "Home.md", "Café.md"),  # NFD (as macOS writes names) matches NFC
        # An exact path from the root wins over the linking note's folder.
        ("Note", "a/sub/C.md", "Note.md"),
        ("a/Note", "b/Deep/Note.md", "a/Note.md"),
        ("/a/Note", "Home.md", "a/Note.md"),
        # Otherwise a note in the linking note's own folder wins...
        ("Dup", "y/Other.md", "y/Dup.md"),
        ("Dup", "x/Other.md", "x/Dup.md"),
        # ...else the shortest path, ties broken by path order.
        ("Dup", "Home.md", "x/Dup.md"),
        ("Dup", "z/Other.md", "x/Dup.md"),
        ("C", "Home.md", "ab/C.md"),
        # A partial path matches whole trailing components only.
        ("sub/C", "Home.md", "a/sub/C.md"),
        ("Deep/Note", "Home.md", "b/Deep/Note.md"),
        ("b/C", "Home.md", None),
        ("eep/Note", "Home.md", None),
        # ./ and ../ are relative to the linking note's folder.
        ("./C.md", "a/sub/Other.md", "a/sub/C.md"),
        ("../Note.md", "a/sub/Other.md", "a/Note.md"),
        ("../../Home", "a/sub/Other.md", "Home.md"),
        ("../Home.md", "Home.md", None),  # climbs out of the vault
        ("./Only Here", "a/Other.md", None),
        # Unresolved.
        ("Missing", "Home.md", None),
        ("Note.png", "Home.md", None),
        ("img", "Home.md", None),
    ],
)
def test_resolve(resolver: LinkResolver, target: str, source: str, expected: str | None) -> None:
    assert resolver.resolve(target, source) == expected


def test_a_link_resolves_when_its_note_appears_and_falls_back_when_it_goes() -> None:
    resolver = LinkResolver(["a/Source.md"])
    assert resolver.resolve("Target", "a/Source.md") is None
    resolver.add("z/deeper/Target.md")
    assert resolver.resolve("Target", "a/Source.md") == "z/deeper/Target.md"
    resolver.add("Target.md")
    assert resolver.resolve("Target", "a/Source.md") == "Target.md"
    resolver.add("a/Target.md")
    assert resolver.resolve("target", "a/Source.md") == "Target.md"  # exact path still first
    resolver.remove("Target.md")
    assert resolver.resolve("target", "a/Source.md") == "a/Target.md"
    resolver.remove("a/Target.md")
    resolver.remove("z/deeper/Target.md")
    assert resolver.resolve("Target", "a/Source.md") is None


def test_rename_is_remove_then_add() -> None:
    resolver = LinkResolver(["Old.md", "Source.md"])
    resolver.remove("Old.md")
    resolver.add("New.md")
    assert resolver.resolve("Old", "Source.md") is None
    assert resolver.resolve("new", "Source.md") == "New.md"


def test_membership_add_remove_are_idempotent() -> None:
    resolver = LinkResolver(["A.md"])
    resolver.add("A.md")
    assert len(resolver) == 1
    assert "A.md" in resolver
    assert "a.md" not in resolver  # membership is by exact path
    assert 3 not in resolver
    resolver.remove("A.md")
    resolver.remove("A.md")
    resolver.remove("Never.md")
    assert len(resolver) == 0
    assert resolver.resolve("A", "B.md") is None


def test_paths_differing_only_in_case_both_stay_indexed() -> None:
    resolver = LinkResolver(["Note.md", "note.md"])
    assert resolver.resolve("NOTE", "x.md") == "Note.md"  # path order: "N" < "n"
    resolver.remove("Note.md")
    assert resolver.resolve("NOTE", "x.md") == "note.md"


def test_aliases_never_resolve() -> None:
    # Aliases live in frontmatter; the resolver only knows file paths (Obsidian leaves
    # [[Alias]] unresolved).
    assert LinkResolver(["B.md"]).resolve("Alias B", "A.md") is None
