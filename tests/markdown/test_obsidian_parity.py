"""Weaver against what Obsidian itself computed, and against the vaults built to test it.

The ground truth is corpora/tasks-demo-obsidian-cache: resolvedLinks.json and unresolvedLinks.json
for the whole tasks-demo vault, and one dump per note of `Test Data/`. Every difference between
Weaver and Obsidian is listed below by name with its reason; the comparisons themselves are exact.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.corpora import CORPORA, require_corpora
from weaver.markdown.frontmatter import frontmatter_tags
from weaver.markdown.parser import ParsedNote, decode_note, parse_note
from weaver.markdown.patterns import normalize_tag
from weaver.markdown.resolver import LinkResolver

pytestmark = pytest.mark.corpus

# ---------------------------------------------------------------- deliberate differences

# Obsidian's metadata cache reads tags and links inside %%…%% comments; VAULT_SEMANTICS says a
# comment holds neither, so Weaver skips them. These are exactly the items Obsidian found there.
IN_PERCENT_COMMENTS: dict[str, dict[str, list[str]]] = {
    "Test Data/comments_markdown_style.md": {
        "tags": ["#i-am-parsed-by-obsidian"],  # (its "#task" inside %% also repeats a task tag)
        "links": ["comments_html_style"],
    },
}

# The cache was taken before the vault snapshot we have: four notes of the vault are missing
# from it, so it holds no expectations for them.
ADDED_AFTER_CACHE = {
    "Manual Testing/Manually testing views.md",
    "Manual Testing/Nested Backlinks.md",
    "Manual Testing/Smoke test JS setting - should fail when disabled.md",
    "Manual Testing/Smoke test JS setting - should work when disabled.md",
}

# A plain body link, outside any code or comment, that the cache does not list; nothing in the
# note hides it, so we take it for a line written after the cache was taken (see above).
NEWER_THAN_CACHE: dict[str, dict[str, int]] = {
    "How To/Find tasks in notes with particular tag.md": {
        "Test Data/yaml_all_property_types_populated.md": 1,
    },
}

# ---------------------------------------------------------------- helpers

TASKS_DEMO = CORPORA / "tasks-demo"
DUMPS = CORPORA / "tasks-demo-obsidian-cache"


def vault_files(root: Path) -> list[str]:
    """Every file below root as a vault path, skipping dot-folders and dot-files."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = Path(folder).relative_to(root)
        found += [(rel / f).as_posix() for f in files if not f.startswith(".")]
    return sorted(found)


def read_note(root: Path, path: str) -> ParsedNote:
    text, error = decode_note((root / path).read_bytes())
    assert error is None, path
    return parse_note(path, text)


def link_text(target: str, subpath: str | None) -> str:
    """Obsidian's `link` field: the target, then "#" and the subpath when there is one."""
    return target if subpath is None else f"{target}#{subpath}"


def link_maps(
    note: ParsedNote, source: str, resolver: LinkResolver
) -> tuple[dict[str, int], dict[str, int]]:
    """(resolved path -> count, unresolved link path -> count), as Obsidian's two JSON files."""
    resolved: Counter[str] = Counter()
    unresolved: Counter[str] = Counter()
    for link in note.links:
        path = resolver.resolve(link.target, source)
        if path is None:
            unresolved[link.target] += 1
        else:
            resolved[path] += 1
    return dict(resolved), dict(unresolved)


@pytest.fixture(scope="module")
def tasks_demo() -> tuple[list[str], LinkResolver]:
    require_corpora()
    files = vault_files(TASKS_DEMO)
    return files, LinkResolver(files)


# ---------------------------------------------------------------- tasks-demo, the whole vault


def expected_links(
    source: str, resolved: dict[str, int], unresolved: dict[str, int], files: set[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """Obsidian's maps for source, adjusted for our copy of the vault and the named exceptions."""
    resolved, unresolved = dict(resolved), dict(unresolved)
    for path in [p for p in resolved if p not in files and not p.endswith(".md")]:
        # Attachments were not copied into the corpora, so what Obsidian resolved to them is
        # unresolved here, keyed like any unresolved link: the link path, here its file name.
        unresolved[path.rsplit("/", 1)[-1]] = resolved.pop(path)
    for path, count in NEWER_THAN_CACHE.get(source, {}).items():
        resolved[path] = resolved.get(path, 0) + count
    return resolved, unresolved


def test_tasks_demo_links_resolve_as_in_obsidian(
    tasks_demo: tuple[list[str], LinkResolver],
) -> None:
    files, resolver = tasks_demo
    cache = DUMPS / "metadataCache"
    all_resolved = json.loads((cache / "resolvedLinks.json").read_text(encoding="utf-8"))
    all_unresolved = json.loads((cache / "unresolvedLinks.json").read_text(encoding="utf-8"))
    notes = [f for f in files if f.lower().endswith(".md")]
    # Only .md files were copied, so Obsidian's non-note sources (a .canvas) have no twin here.
    assert {s for s in all_resolved if s.endswith(".md")} == set(notes) - ADDED_AFTER_CACHE
    for source, comment in IN_PERCENT_COMMENTS.items():  # drop what sits in %% comments
        for target in comment["links"]:
            path = resolver.resolve(target, source)
            assert path is not None
            all_resolved[source][path] -= 1
            all_resolved[source] = {p: n for p, n in all_resolved[source].items() if n}
    mismatches = {}
    for source in sorted(set(notes) - ADDED_AFTER_CACHE):
        ours = link_maps(read_note(TASKS_DEMO, source), source, resolver)
        theirs = expected_links(source, all_resolved[source], all_unresolved[source], set(files))
        if ours != theirs:
            mismatches[source] = {"weaver": ours, "obsidian": theirs}
    assert mismatches == {}


# ---------------------------------------------------------------- tasks-demo, per-note dumps


def dump_names() -> list[str]:
    found = sorted(p.stem for p in DUMPS.glob("*.json"))
    return found or ["<corpora missing>"]  # one test that skips (or fails on CI)


def without(items: list[str], removed: list[str]) -> list[str]:
    kept = list(items)
    for item in removed:
        assert item in kept, f"stale exception: Obsidian no longer reports {item!r}"
        kept.remove(item)
    return kept


@pytest.fixture(params=dump_names())
def dump(request: pytest.FixtureRequest) -> tuple[dict[str, Any], ParsedNote]:
    require_corpora()
    data = json.loads((DUMPS / f"{request.param}.json").read_text(encoding="utf-8"))
    return data, parse_note(data["filePath"], data["fileContents"])


def test_frontmatter_matches(dump: tuple[dict[str, Any], ParsedNote]) -> None:
    data, note = dump
    assert note.error is None
    assert note.frontmatter == data["cachedMetadata"].get("frontmatter", {})


def test_frontmatter_tags_match_parse_front_matter_tags(
    dump: tuple[dict[str, Any], ParsedNote],
) -> None:
    data, note = dump
    expected = [tag.removeprefix("#") for tag in data["parseFrontMatterTags"] or []]
    assert list(frontmatter_tags(note.frontmatter)) == expected


def test_tags_match_get_all_tags(dump: tuple[dict[str, Any], ParsedNote]) -> None:
    # getAllTags() lists every occurrence, with "#": frontmatter tags first, then the body's in
    # order. Weaver keeps each tag once (first spelling, case-insensitively), so we reduce
    # Obsidian's list the same way and compare in order.
    data, note = dump
    removed = IN_PERCENT_COMMENTS.get(data["filePath"], {}).get("tags", [])
    firsts: dict[str, str] = {}
    for tag in without(data["getAllTags"], removed):
        firsts.setdefault(normalize_tag(tag), tag.removeprefix("#"))
    assert list(note.tags) == list(firsts.values())


def test_links_embeds_and_frontmatter_links_match(
    dump: tuple[dict[str, Any], ParsedNote],
) -> None:
    data, note = dump
    cached = data["cachedMetadata"]
    removed = IN_PERCENT_COMMENTS.get(data["filePath"], {}).get("links", [])
    body = [lk for lk in note.links if lk.kind in ("wikilink", "markdown")]
    assert [link_text(lk.target, lk.subpath) for lk in body] == without(
        [lk["link"] for lk in cached.get("links", [])], removed
    )
    embeds = [lk for lk in note.links if lk.kind == "embed"]
    assert [link_text(lk.target, lk.subpath) for lk in embeds] == [
        lk["link"] for lk in cached.get("embeds", [])
    ]
    in_yaml = [lk for lk in note.links if lk.kind == "frontmatter"]
    # Obsidian's key is a path ("list.0"); Weaver's relation is its top-level key.
    assert [(link_text(lk.target, lk.subpath), lk.relation) for lk in in_yaml] == [
        (lk["link"], lk["key"].split(".")[0]) for lk in cached.get("frontmatterLinks", [])
    ]


def test_link_lines_match(dump: tuple[dict[str, Any], ParsedNote]) -> None:
    data, note = dump
    cached = data["cachedMetadata"]
    removed = IN_PERCENT_COMMENTS.get(data["filePath"], {}).get("links", [])
    obsidian = [
        lk["position"]["start"]["line"]
        for kind in ("links", "embeds")
        for lk in cached.get(kind, [])
        if lk["link"] not in removed
    ]
    assert [lk.line for lk in note.links if lk.kind != "frontmatter"] == sorted(obsidian)


def test_headings_match(dump: tuple[dict[str, Any], ParsedNote]) -> None:
    data, note = dump
    assert [(h.level, h.text, h.line) for h in note.headings] == [
        (h["level"], h["heading"], h["position"]["start"]["line"])
        for h in data["cachedMetadata"].get("headings", [])
    ]


def test_tasks_match_list_items(dump: tuple[dict[str, Any], ParsedNote]) -> None:
    data, note = dump
    statuses = [item.get("task") for item in data["cachedMetadata"].get("listItems", [])]
    tasks = [s for s in statuses if s is not None]
    assert (note.tasks_open, note.tasks_done) == (tasks.count(" "), len(tasks) - tasks.count(" "))


def test_tasks_and_their_parents_match_list_items(
    dump: tuple[dict[str, Any], ParsedNote],
) -> None:
    # Obsidian's parent is the enclosing list item, task or not; ours is the nearest enclosing
    # task, so walk up through plain items. A negative parent is the top of a list.
    data, note = dump
    items: dict[int, dict[str, Any]] = {}
    for item in data["cachedMetadata"].get("listItems", []):
        items.setdefault(item["position"]["start"]["line"], item)  # `- [ ] 1. x`: two on a line

    def task_parent(line: int) -> int | None:
        parent = items[line]["parent"]
        while parent in items and "task" not in items[parent]:
            parent = items[parent]["parent"]
        return parent + 1 if parent in items else None

    expected = [(line + 1, item.get("task"), task_parent(line)) for line, item in items.items()]
    assert [(t.line, t.status_char, t.parent_line) for t in note.tasks] == sorted(
        (line, status, parent) for line, status, parent in expected if status is not None
    )


def test_resolve_link_to_path_matches(
    dump: tuple[dict[str, Any], ParsedNote], tasks_demo: tuple[list[str], LinkResolver]
) -> None:
    data, _ = dump
    files, resolver = tasks_demo
    for link, path in data["resolveLinkToPath"].items():
        if path is not None and path not in files and not path.endswith(".md"):
            path = None  # an attachment Obsidian had and the corpora do not
        target = link.split("#", 1)[0]
        assert resolver.resolve(target, data["filePath"]) == path, link


# ---------------------------------------------------------------- edge-vault


@pytest.fixture(scope="module")
def edge() -> tuple[Path, LinkResolver]:
    root = require_corpora() / "edge-vault"
    return root, LinkResolver(vault_files(root))


def test_edge_a_links_and_their_resolution(edge: tuple[Path, LinkResolver]) -> None:
    root, resolver = edge
    note = read_note(root, "A.md")
    assert [(lk.kind, lk.target, lk.alias, lk.subpath, resolver.resolve(lk.target, "A.md"))
            for lk in note.links] == [
        ("wikilink", "B", None, None, "B.md"),
        ("wikilink", "b", None, None, "B.md"),  # case-insensitive
        ("wikilink", "B.md", None, None, "B.md"),  # extension ignored
        ("wikilink", "B", "alias text", None, "B.md"),
        ("wikilink", "B", None, "Heading", "B.md"),
        ("wikilink", "B", None, "^blk", "B.md"),
        ("wikilink", "", None, "Heading one", "A.md"),  # self-link
        ("wikilink", "sub/C", None, None, "sub/C.md"),  # path
        ("wikilink", "C", None, None, "sub/C.md"),  # by name, not "sub/C D.md"
        ("wikilink", "Dup", None, None, "x/Dup.md"),  # same length: path order
        ("wikilink", "x/Dup", None, None, "x/Dup.md"),
        ("wikilink", "Missing Note", None, None, None),
        ("wikilink", "Alias B", None, None, None),  # aliases never resolve
        ("wikilink", "Sq]uare", None, None, None),  # a single "]" does not end a link
        ("embed", "B", None, None, "B.md"),
        ("embed", "img.png", None, None, None),  # attachments are absent from the corpora
        ("embed", "img.png", "100", None, None),
        ("wikilink", "doc.pdf", None, None, None),
        ("markdown", "B.md", "B md", None, "B.md"),
        ("markdown", "sub/C D.md", "CD", None, "sub/C D.md"),  # percent-decoded
    ]  # fmt: skip
    assert note.frontmatter["created"] == "2024-01-02"  # a date kept as written
    assert note.aliases == ("Alias A",)


def test_edge_a_tags(edge: tuple[Path, LinkResolver]) -> None:
    root, _ = edge
    assert read_note(root, "A.md").tags == (
        "fm1", "fm2", "fm/nested",  # frontmatter first, "#" dropped
        "tag", "nested/child", "y1984", "café", "日本語", "a", "x_y-z", "emoji✅",  # not #1984
        "inheading",  # a tag in a heading counts
    )  # fmt: skip


def test_edge_a_ignores_code_comments_math_urls(edge: tuple[Path, LinkResolver]) -> None:
    root, _ = edge
    note = read_note(root, "A.md")
    found = {lk.target for lk in note.links} | set(note.tags)
    for absent in ("InlineCode", "incode", "InFence", "infence", "InComment", "incomment",
                   "InHtml", "inhtml", "math", "escaped", "anchor", "bar", "paren", "1984",
                   "https://example.com/"):  # fmt: skip
        assert absent not in found
    assert [(h.level, h.text) for h in note.headings] == [
        (1, "Heading one"),
        (2, "Sub heading #inheading"),
    ]
    assert (note.title, note.heading) == ("A", "Heading one")


def test_edge_b_single_string_tag_and_aliases(edge: tuple[Path, LinkResolver]) -> None:
    root, resolver = edge
    note = read_note(root, "B.md")
    assert (note.tags, note.aliases, note.title, note.heading) == (
        ("single-string-tag",),
        ("Alias B",),
        "B",
        "Heading",
    )
    assert [resolver.resolve(lk.target, "B.md") for lk in note.links] == ["A.md"]


def test_edge_bom(edge: tuple[Path, LinkResolver]) -> None:
    root, _ = edge
    assert (root / "BOM.md").read_bytes().startswith(b"\xef\xbb\xbf")
    note = read_note(root, "BOM.md")
    assert (note.frontmatter, note.tags, note.body) == ({"tags": ["bom"]}, ("bom",), "bom body\n")


def test_edge_crlf(edge: tuple[Path, LinkResolver]) -> None:
    root, _ = edge
    assert b"\r\n" in (root / "CRLF.md").read_bytes()
    note = read_note(root, "CRLF.md")
    assert (note.frontmatter, note.tags, note.error) == (
        {"tags": ["crlf"]},
        ("crlf", "crlfbody"),
        None,
    )


def test_edge_bad_yaml_keeps_the_body(edge: tuple[Path, LinkResolver]) -> None:
    root, resolver = edge
    note = read_note(root, "BadYAML.md")
    assert note.frontmatter == {}
    assert note.error is not None
    assert re.match(r"invalid YAML frontmatter at line 3: .*\(BadYAML\.md\)$", note.error)
    assert note.tags == ("badyaml",)
    assert [resolver.resolve(lk.target, "BadYAML.md") for lk in note.links] == ["A.md"]


def test_edge_list_frontmatter(edge: tuple[Path, LinkResolver]) -> None:
    root, _ = edge
    note = read_note(root, "ListFM.md")
    assert note.frontmatter == {}
    assert note.error is not None
    assert "expected a mapping, found a list" in note.error
    assert note.tags == ("listfm",)


def test_edge_comma_tags_are_not_split(edge: tuple[Path, LinkResolver]) -> None:
    root, _ = edge
    note = read_note(root, "sub/C.md")
    assert note.frontmatter == {"tags": "one, two three"}
    assert note.tags == ("ctag",)  # the frontmatter string is no valid tag: dropped


def test_edge_titles_fall_back_to_the_file_name(edge: tuple[Path, LinkResolver]) -> None:
    root, _ = edge
    titles = {p: read_note(root, p).title for p in ("sub/C D.md", "x/Dup.md", "y/Dup.md")}
    assert titles == {"sub/C D.md": "C D", "x/Dup.md": "Dup", "y/Dup.md": "Dup"}


def test_edge_same_name_prefers_own_folder(edge: tuple[Path, LinkResolver]) -> None:
    _, resolver = edge
    assert resolver.resolve("Dup", "y/Other.md") == "y/Dup.md"
    assert resolver.resolve("Dup", "x/Other.md") == "x/Dup.md"
    assert resolver.resolve("c d", "A.md") == "sub/C D.md"


# ---------------------------------------------------------------- kepano-obsidian


@pytest.fixture(scope="module")
def kepano() -> tuple[Path, LinkResolver, dict[str, ParsedNote]]:
    root = require_corpora() / "kepano-obsidian"
    files = vault_files(root)
    notes = {path: read_note(root, path) for path in files if path.endswith(".md")}
    return root, LinkResolver(files), notes


def test_kepano_templates_record_their_yaml_error(
    kepano: tuple[Path, LinkResolver, dict[str, ParsedNote]],
) -> None:
    root, _, notes = kepano
    failed = {path: note.error for path, note in notes.items() if note.error}
    assert len(notes) == 103
    assert len(failed) == 28
    for path, error in failed.items():
        assert path.startswith("Templates/")
        match = re.match(r"invalid YAML frontmatter at line (\d+): found unhashable key", error)
        assert match, error
        line = (root / path).read_text(encoding="utf-8").split("\n")[int(match[1]) - 1]
        assert "{{" in line  # the error names the line holding the template placeholder
        assert notes[path].frontmatter == {}


def test_kepano_template_bodies_are_still_read(
    kepano: tuple[Path, LinkResolver, dict[str, ParsedNote]],
) -> None:
    _, _, notes = kepano
    note = notes["Templates/Director Template.md"]
    assert note.error is not None
    assert [(lk.kind, lk.target, lk.subpath) for lk in note.links] == [
        ("embed", "Movies.base", "Director")  # the YAML's own links are lost with it
    ]


def test_kepano_frontmatter_links(kepano: tuple[Path, LinkResolver, dict[str, ParsedNote]]) -> None:
    _, resolver, notes = kepano
    actor = notes["Templates/Actor Template.md"]
    assert actor.error is None
    assert [(lk.kind, lk.target, lk.relation, lk.line) for lk in actor.links[:2]] == [
        ("frontmatter", "People", "categories", 1),  # categories: "[[People]]"
        ("frontmatter", "Actors", "type", 3),
    ]
    assert resolver.resolve("People", "Templates/Actor Template.md") == "Categories/People.md"
    blade = notes["References/Blade Runner.md"]
    assert [(lk.target, lk.relation) for lk in blade.links] == [
        ("Movies", "categories"),
        ("Sci-fi", "genre"),
        ("Ridley Scott", "director"),
        ("Harrison Ford", "cast"),
    ]
    assert resolver.resolve("Sci-fi", "References/Blade Runner.md") == "References/Sci-fi.md"


def test_kepano_every_quoted_yaml_link_is_found(
    kepano: tuple[Path, LinkResolver, dict[str, ParsedNote]],
) -> None:
    # An independent count: each `"[[` in a frontmatter block that parsed is one link.
    root, _, notes = kepano
    for path, note in notes.items():
        if note.error is None:
            text = (root / path).read_text(encoding="utf-8")
            block = text[: len(text) - len(note.body)]
            found = [lk for lk in note.links if lk.kind == "frontmatter"]
            assert len(found) == block.count('"[['), path
            assert all(lk.relation in note.frontmatter for lk in found), path


def test_kepano_categories_resolve(
    kepano: tuple[Path, LinkResolver, dict[str, ParsedNote]],
) -> None:
    _, resolver, notes = kepano
    categories = [
        (path, lk.target)
        for path, note in notes.items()
        for lk in note.links
        if lk.relation == "categories"
    ]
    assert len(categories) > 40
    stems = {path.rsplit("/", 1)[-1].removesuffix(".md") for path in notes}
    for path, target in categories:
        found = resolver.resolve(target, path)
        # A category resolves to its note in Categories/ exactly when the vault has one.
        assert found == (f"Categories/{target}.md" if target in stems else None), target
