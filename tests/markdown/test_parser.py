"""weaver.markdown.parser, one table per rule of the README's "How a vault is read"."""

from __future__ import annotations

import json
import random

import pytest

from weaver.markdown.frontmatter import ObsidianYAMLHandler, frontmatter_aliases, frontmatter_tags
from weaver.markdown.parser import Heading, ParsedLink, decode_note, parse_note
from weaver.markdown.patterns import is_valid_tag, normalize_tag

LinkTuple = tuple[str, str, str | None, str | None]  # kind, target, alias, subpath


def links_of(text: str) -> list[LinkTuple]:
    return [(lk.kind, lk.target, lk.alias, lk.subpath) for lk in parse_note("n.md", text).links]


def tags_of(text: str) -> tuple[str, ...]:
    return parse_note("n.md", text).tags


# ---------------------------------------------------------------- frontmatter blocks


@pytest.mark.parametrize(
    ("text", "frontmatter", "body"),
    [
        ("---\na: 1\n---\nbody", {"a": 1}, "body"),
        ("---\na: 1\n---   \nbody", {"a": 1}, "body"),  # trailing spaces on the closer
        ("---  \na: 1\n---\nbody", {"a": 1}, "body"),  # and on the opener
        ("---\r\na: 1\r\n---\r\nbody\r\n", {"a": 1}, "body\r\n"),  # CRLF
        ("\ufeff---\na: 1\n---\nbody", {"a": 1}, "body"),  # BOM left by a plain decode
        ("---\n---\nbody", {}, "body"),  # empty block
        ("---\na: 1\n---", {"a": 1}, ""),  # closer at end of file
        ("\n---\na: 1\n---\nbody", {}, "\n---\na: 1\n---\nbody"),  # not on line 1
        ("---\na: 1\nbody", {}, "---\na: 1\nbody"),  # never closed: no frontmatter
        ("---\na: 1\n----\nbody", {}, "---\na: 1\n----\nbody"),  # ---- is not a closer
        ("---\na: |\n  x\n  ---x\n---\nbody", {"a": "x\n---x\n"}, "body"),  # nor is ---x
        ("----\na: 1\n---\nbody", {}, "----\na: 1\n---\nbody"),  # nor an opener
    ],
)
def test_frontmatter_block(text: str, frontmatter: dict[str, object], body: str) -> None:
    note = parse_note("n.md", text)
    assert (note.frontmatter, note.body, note.error) == (frontmatter, body, None)


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("d: 2024-07-21", {"d": "2024-07-21"}),  # dates stay strings, as Obsidian keeps them
        ("d: 2024-07-21T12:37:00", {"d": "2024-07-21T12:37:00"}),
        ("d: 2024-07-21 12:37:00+02:00", {"d": "2024-07-21 12:37:00+02:00"}),
        ("b: yes\nc: on\nd: No", {"b": "yes", "c": "on", "d": "No"}),  # YAML 1.2 booleans only
        ("b: true\nc: False", {"b": True, "c": False}),
        ("n: 010\nh: 0x10\no: 0o10\nt: 1:20", {"n": 10, "h": 16, "o": 8, "t": "1:20"}),
        ("f: 1.5\ne: 1e3\nz: ~\nw:", {"f": 1.5, "e": 1000.0, "z": None, "w": None}),
        ("nan: .nan\ninf: -.inf", {"nan": None, "inf": None}),  # not JSON: become null
        ("b: !!binary aGk=", {"b": "hi"}),  # bytes become text
        ("1: a\ntrue: b\n~: c\n1.5: d", {"1": "a", "true": "b", "null": "c", "1.5": "d"}),
        ("big: " + "9" * 30, {"big": "9" * 30}),  # beyond 64 bits: kept as text
        ("t: !!timestamp 2024-01-02", {"t": "2024-01-02"}),  # an explicit date, still a string
        ("s: !!set {b, a}", {"s": ["a", "b"]}),
        ("a: &x [1, 2]\nb: *x", {"a": [1, 2], "b": [1, 2]}),
        ('{"tags": "journal", "publish": false}', {"tags": "journal", "publish": False}),
    ],
)
def test_frontmatter_values_are_json(yaml_text: str, expected: dict[str, object]) -> None:
    note = parse_note("n.md", f"---\n{yaml_text}\n---\n")
    assert note.frontmatter == expected
    assert note.error is None
    json.dumps(note.frontmatter, allow_nan=False)


@pytest.mark.parametrize(
    ("yaml_text", "line", "detail"),
    [
        ("a: 1\ncreated: {{date}}", 3, "found unhashable key"),  # kepano's templates
        ("title: [unclosed", 3, "did not find expected"),
        ("a: 1\n- @handle", 3, ""),
        ("- a\n- b", 2, "expected a mapping, found a list"),
        ("just text", 2, "expected a mapping, found a scalar"),
        ("a: !python/object:os.system x", 2, "could not determine a constructor"),
    ],
)
def test_bad_frontmatter_is_recorded_and_the_body_still_read(
    yaml_text: str, line: int, detail: str
) -> None:
    note = parse_note("dir/T.md", f"---\n{yaml_text}\n---\n#body-tag [[Link]]\n")
    assert note.frontmatter == {}
    assert note.error is not None
    assert note.error.startswith(f"invalid YAML frontmatter at line {line}: {detail}")
    assert "dir/T.md" in note.error
    assert note.tags == ("body-tag",)
    assert [lk.target for lk in note.links] == ["Link"]


def test_alias_bomb_is_an_error_not_a_hang() -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    note = parse_note("n.md", "---\n" + "\n".join(levels) + "\n---\n")
    assert note.frontmatter == {}
    assert note.error is not None
    assert "too many" in note.error


def test_frontmatter_line_numbers_shift_the_body() -> None:
    note = parse_note("n.md", "---\na: 1\nb: 2\n---\n\n[[X]] #t\n")
    assert [lk.line for lk in note.links] == [5]


# ---------------------------------------------------------------- tags, aliases, type, status


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ({"tags": ["a", "#b", "c/d"]}, ("a", "b", "c/d")),
        ({"tags": "single-tag"}, ("single-tag",)),
        ({"tags": "#hashed"}, ("hashed",)),
        ({"tags": "a, b"}, ()),  # not split, and invalid: dropped (Obsidian 1.9)
        ({"tags": "two words"}, ()),
        ({"tags": ["ok", "not ok", "1984", "y1984", 5, None]}, ("ok", "y1984")),
        ({"tags": None}, ()),
        ({"tags": []}, ()),
        ({"tag": "old"}, ()),  # the singular key is not read
        ({"Tags": ["cap"]}, ("cap",)),
        ({"tags": ["café", "日本", "x_y-z"]}, ("café", "日本", "x_y-z")),
    ],
)
def test_frontmatter_tags(frontmatter: dict[str, object], expected: tuple[str, ...]) -> None:
    assert frontmatter_tags(frontmatter) == expected


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ({"aliases": ["A", "B"]}, ("A", "B")),
        ({"aliases": "One, not split"}, ("One, not split",)),
        ({"aliases": ["A", "", None, "A", 2024]}, ("A", "2024")),
        ({"aliases": None}, ()),
        ({}, ()),
    ],
)
def test_frontmatter_aliases(frontmatter: dict[str, object], expected: tuple[str, ...]) -> None:
    assert frontmatter_aliases(frontmatter) == expected


@pytest.mark.parametrize(
    ("yaml_text", "type_", "status"),
    [
        ("type: project\nstatus: active", "project", "active"),
        ("type: 3\nstatus: true", "3", "true"),
        ("type: [a, b]\nstatus: {x: 1}", None, None),
        ("other: 1", None, None),
    ],
)
def test_type_and_status(yaml_text: str, type_: str | None, status: str | None) -> None:
    note = parse_note("n.md", f"---\n{yaml_text}\n---\n")
    assert (note.type, note.status) == (type_, status)


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("---\ntitle: From FM\n---\n# H1\n", "From FM"),
        ("---\ntitle: 42\n---\n# H1\n", "My Note"),  # only a string title counts
        ("## H2\n# First H1\n# Second\n", "My Note"),  # as Obsidian: the file name
        ("---\ntitle: '[[Target|The **Title**]]'\n---\n", "The Title"),  # no markup
        ("---\ntitle: ' '\n---\n", "My Note"),
        ("## Only H2\n", "My Note"),
        ("```\n# not a heading\n```\n", "My Note"),
    ],
)
def test_title(text: str, title: str) -> None:
    assert parse_note("folder/My Note.MD", text).title == title


# ---------------------------------------------------------------- frontmatter links


def test_frontmatter_links_at_any_depth_with_their_key() -> None:
    text = (
        "---\n"
        'categories: "[[Projects]]"\n'
        "people:\n"
        '  - "[[Ann|A.]]"\n'
        "  - plain\n"
        "nested:\n"
        '  deep: ["see [[Doc#Part]] and [[Other]]"]\n'
        "unquoted: [[NotALink]]\n"  # YAML reads this as a nested list, not a string
        "---\n"
        "[[Body]]\n"
    )
    links = parse_note("n.md", text).links
    assert links == (
        ParsedLink("Projects", "frontmatter", None, None, "categories", 1),
        ParsedLink("Ann", "frontmatter", "A.", None, "people", 3),
        ParsedLink("Doc", "frontmatter", None, "Part", "nested", 6),
        ParsedLink("Other", "frontmatter", None, None, "nested", 6),
        ParsedLink("Body", "wikilink", None, None, None, 9),
    )


def test_frontmatter_self_link() -> None:
    (link,) = parse_note("n.md", '---\nup: "[[#Top]]"\n---\n').links
    assert (link.target, link.subpath, link.relation) == ("", "Top", "up")


# ---------------------------------------------------------------- link forms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[Note]]", [("wikilink", "Note", None, None)]),
        ("[[Note.md]]", [("wikilink", "Note.md", None, None)]),
        ("[[Note|alias]]", [("wikilink", "Note", "alias", None)]),
        ("[[Note|a|b]]", [("wikilink", "Note", "a|b", None)]),  # split at the first "|"
        ("[[Note\\|alias]]", [("wikilink", "Note", "alias", None)]),  # escaped in a table
        ("[[|x]]", [("wikilink", "|x", None, None)]),
        ("[[|]]", [("wikilink", "|", None, None)]),
        ("[[|#alias]]", [("wikilink", "|", None, "alias")]),
        ("[[]]", []),
        ("[[  ]]", []),
        ("[[ Note | alias ]]", [("wikilink", "Note", "alias", None)]),
        ("[[Note#Heading]]", [("wikilink", "Note", None, "Heading")]),
        ("[[Note#H1#H2]]", [("wikilink", "Note", None, "H1#H2")]),
        ("[[Note#^blockid]]", [("wikilink", "Note", None, "^blockid")]),
        ("[[#Heading]]", [("wikilink", "", None, "Heading")]),
        ("[[#^blk|see]]", [("wikilink", "", "see", "^blk")]),
        ("[[folder/Note]]", [("wikilink", "folder/Note", None, None)]),
        ("[[pa#th/x]]", [("wikilink", "pa", None, "th/x")]),
        ("[[Sq]uare]]", [("wikilink", "Sq]uare", None, None)]),
        ("[[a [[b]]", [("wikilink", "b", None, None)]),
        ("[[no\nnewline]]", []),
        ("![[Note]]", [("embed", "Note", None, None)]),
        ("![[img.png|100]]", [("embed", "img.png", "100", None)]),
        ("[t](Note.md)", [("markdown", "Note.md", "t", None)]),
        ("[t](<My Note.md>)", [("markdown", "My Note.md", "t", None)]),
        ("[t](My%20Note.md#H%201)", [("markdown", "My Note.md", "t", "H 1")]),
        ("[t](Note.md 'title')", [("markdown", "Note.md", "t", None)]),
        ("[t](Note_(1).md)", [("markdown", "Note_(1).md", "t", None)]),
        ("[t](#heading)", [("markdown", "", "t", "heading")]),
        ("[](Note.md)", [("markdown", "Note.md", None, None)]),
        ("![alt](img.png)", [("embed", "img.png", "alt", None)]),
        ("[t](https://x.com/a#b) [m](mailto:a@b.c) [o](obsidian://open?x=1)", []),
        ("[t](//host/x) [t](My Note.md)", []),  # protocol-relative; a bare space ends it
        ("[]() [alias]()", []),
        ("\\[\\[escaped]]", []),
        ("\\![[x]]", [("wikilink", "x", None, None)]),  # only the "!" is escaped
        ("\\\\[[x]]", [("wikilink", "x", None, None)]),  # an escaped backslash
        ("# Heading with [[Link]]", [("wikilink", "Link", None, None)]),
        ("[[A]] then [B](B.md) then ![[C]]", [
            ("wikilink", "A", None, None),
            ("markdown", "B.md", "B", None),
            ("embed", "C", None, None),
        ]),
    ],
)  # fmt: skip
def test_link_forms(text: str, expected: list[LinkTuple]) -> None:
    assert links_of(text) == expected


# ---------------------------------------------------------------- where links and tags are not


@pytest.mark.parametrize(
    "text",
    [
        "`[[X]] #t`",
        "``code with ` inside [[X]] #t``",
        "```\n[[X]] #t\n```",
        "~~~python\n[[X]] #t\n~~~",
        "````\n```\n[[X]] #t\n````",  # a shorter fence does not close a longer one
        "```\n[[X]] #t\n",  # an unclosed fence runs to the end
        "- item\n  ```sh\n  [[X]] #t\n  ```",  # fence inside a list item
        "> ```\n> [[X]] #t\n> ```",  # and inside a blockquote
        "<!-- [[X]] #t -->",
        "<!--\n[[X]]\n#t\n-->",
        "%%[[X]] #t%%",
        "%%\n[[X]]\n#t\n%%",
        "%% [[X]] #t",  # an unclosed %% comments out the rest
        "$[[X]] #t$",
        "$$\n[[X]]\n\n#t\n$$",
        "\\#t \\[\\[X]]",
    ],
)
def test_no_links_or_tags_in_code_comments_math(text: str) -> None:
    note = parse_note("n.md", text + "\n")
    assert (note.links, note.tags) == ((), ())


@pytest.mark.parametrize(
    ("text", "targets"),
    [
        ("costs $5 and [[X]] and $6", ["X"]),  # "$5 ... $" is not math: closer follows a space
        ("$x$5 [[X]] $", ["X"]),  # a closer followed by a digit does not close
        ("a `b` [[X]] `c`", ["X"]),
        ("unmatched ` [[X]]", ["X"]),
        ("``` [[X]] ``` inline", []),  # backticks in the info string: a code span, not a fence
        ("`a\n\n[[X]]` b", ["X"]),  # a code span stops at a blank line
        ("~~strike~~ [[X]]", ["X"]),
        ("<!-- closed --> [[X]]", ["X"]),
        ("%%closed%% [[X]]", ["X"]),
        ("```\ncode\n```\n[[X]]", ["X"]),
    ],
)
def test_links_next_to_code_comments_math(text: str, targets: list[str]) -> None:
    assert [lk.target for lk in parse_note("n.md", text).links] == targets


# ---------------------------------------------------------------- typed links


@pytest.mark.parametrize(
    ("text", "relations"),
    [
        ("up:: [[X]]", [("X", "up")]),
        ("- parent:: [[X]], [[Y]]", [("X", "parent"), ("Y", "parent")]),
        ("**mentor**:: [[X]]", [("X", "mentor")]),
        ("> quote:: [[X]]", [("X", "quote")]),
        ("Task [rel:: [[X]]] and [[Y]]", [("X", "rel"), ("Y", None)]),
        ("(rel:: [[X]]) [[Y]]", [("X", "rel"), ("Y", None)]),
        ("[a:: [[X]]] [b:: [Y](Y.md)]", [("X", "a"), ("Y.md", "b")]),
        ("[[rel::X]]", [("X", "rel")]),
        ("[[rel::X|alias]]", [("X", "rel")]),
        ("[[X]] before:: field", [("X", None)]),
        ("plain [[X]]", [("X", None)]),
    ],
)
def test_relations(text: str, relations: list[tuple[str, str | None]]) -> None:
    assert [(lk.target, lk.relation) for lk in parse_note("n.md", text).links] == relations


# ---------------------------------------------------------------- tags


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#tag", ("tag",)),
        ("a #tag.", ("tag",)),
        ("#tag, #other!", ("tag", "other")),
        ("foo#bar (#x) url/#frag [#y] x:#z", ()),
        ("#1984", ()),
        ("#y1984 #1990s", ("y1984", "1990s")),
        ("# Heading", ()),
        ("#a/b/c", ("a/b/c",)),
        ("#café #日本語 #emoji✅ #x_y-z", ("café", "日本語", "emoji✅", "x_y-z")),
        # A tag right after a tag is one too: read back from Obsidian 1.13.7 (`#tl#tm`,
        # cyanheads/obsidian-mcp-server#140), as a 2021 forum report found (`#Bob#Alice`).
        ("#a#b", ("a", "b")),
        ("#a/#b x#c", ("a/", "b")),
        ("#tag #Tag #TAG", ("tag",)),  # case-insensitive, first spelling kept
        ("\t#tab\n#line", ("tab", "line")),
        ("[[#heading]] [t](#frag) [[Note #x]]", ()),
        ("`x`#t **#bold**", ()),
        ("\\[\\[#Escaped Links\\]\\]", ("Escaped",)),  # as Obsidian: an escape ends a word
        ("## Heading #in-heading", ("in-heading",)),
    ],
)
def test_inline_tags(text: str, expected: tuple[str, ...]) -> None:
    assert tags_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # HTML blocks are raw HTML: read back from Obsidian 1.13.7 (obsidian-mcp-server#140).
        ("<div>\nhello #tp\n</div>", ()),
        ("<p>x #tr</p>", ()),
        ("<pre>\n#a\n\n#b\n</pre>\n#c", ("c",)),  # <pre> runs to its closing tag
        ("<div>\n#hidden\n\n#shown", ("shown",)),  # a <div> block ends at a blank line
        ("\n<span>\n#block\n\n#after", ("after",)),  # a tag alone on its line, after a blank
        ("para\n<span>\n#inpara", ("inpara",)),  # ... which cannot interrupt a paragraph
        # Inline HTML: the markup is raw, the text around and between it is text.
        ('<span style="color: #1a1a1a">x</span>', ()),
        ('text <span style="color: #ff0000">red #in</span> #real', ("in", "real")),
        ("<font color=#f00>x</font> #t", ("t",)),
        ("`<div>` #t", ("t",)),  # code, not HTML
    ],
)
def test_tags_around_html(text: str, expected: tuple[str, ...]) -> None:
    assert tags_of(text) == expected


def test_frontmatter_tags_come_first_and_dedupe_with_inline() -> None:
    text = "---\ntags: [Alpha, beta]\n---\n#alpha #gamma #BETA\n"
    assert tags_of(text) == ("Alpha", "beta", "gamma")


@pytest.mark.parametrize(
    ("tag", "valid"),
    [("a", True), ("a/b", True), ("1984", False), ("", False), ("a b", False), ("a,b", False)],
)
def test_is_valid_tag(tag: str, valid: bool) -> None:
    assert is_valid_tag(tag) is valid


@pytest.mark.parametrize(("tag", "key"), [("#Tag", "tag"), ("ÉTÉ", "été"), ("a/B", "a/b")])
def test_normalize_tag(tag: str, key: str) -> None:
    assert normalize_tag(tag) == key


# ---------------------------------------------------------------- headings, tasks, words


def test_headings() -> None:
    text = "# One\n## Two ##\n   ### Three\n    #### code\n####### seven\n#tag\n```\n# no\n```\n#"
    assert parse_note("n.md", text).headings == (
        Heading(1, "One", 0),
        Heading(2, "Two", 1),
        Heading(3, "Three", 2),
        Heading(1, "", 9),
    )


@pytest.mark.parametrize(
    ("text", "open_", "done"),
    [
        ("- [ ] a\n* [x] b\n+ [X] c\n1. [ ] d\n2) [/] e\n- [-] f", 2, 4),
        ("> - [ ] quoted\n\t- [ ] indented\n- [ ]", 3, 0),
        ("-[ ] no\n- [] no\n- [  ] no\n- [ ]x no\n```\n- [ ] code\n```", 0, 0),
        ("%%\n- [ ] commented\n%%\n<!--\n- [x] too\n-->", 0, 0),
    ],
)
def test_tasks(text: str, open_: int, done: int) -> None:
    note = parse_note("n.md", text)
    assert (note.tasks_open, note.tasks_done) == (open_, done)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("---\ntitle: not counted\n---\none two three", 3),
        ("Hello, world! It's fine.", 4),
        ("a `code here` b\n```\nlots of code\n```\n%% hidden %% c <!-- gone -->", 3),
        ("- [ ] task one\n# Heading", 3),
        ("", 0),
    ],
)
def test_word_count(text: str, words: int) -> None:
    assert parse_note("n.md", text).word_count == words


# ---------------------------------------------------------------- decoding, robustness


@pytest.mark.parametrize(
    ("data", "text", "error"),
    [
        (b"plain", "plain", None),
        (b"\xef\xbb\xbf---\na: 1\n---\n", "---\na: 1\n---\n", None),
        ("café".encode(), "café", None),
    ],
)
def test_decode_note(data: bytes, text: str, error: str | None) -> None:
    assert decode_note(data) == (text, error)


def test_decode_note_rejects_non_utf8() -> None:
    text, error = decode_note(b"caf\xe9")
    assert text == ""
    assert error is not None
    assert error.startswith("not valid UTF-8: ")


def test_handler_for_python_frontmatter() -> None:
    handler = ObsidianYAMLHandler()
    assert handler.detect("---\na: 2024-01-01\n---\nbody")
    assert not handler.detect("\n---\na: 1\n---\n")
    assert handler.split("---\na: 1\n---\nbody") == ("a: 1\n", "body")
    assert handler.load("a: 2024-01-01\nb: .nan") == {"a": "2024-01-01", "b": None}
    with pytest.raises(ValueError, match="no frontmatter"):
        handler.split("no block")


def test_line_numbers_survive_crlf_and_masks() -> None:
    text = "---\r\na: 1\r\n---\r\n```\r\n[[no]]\r\n```\r\n%%\r\nx\r\n%%\r\n[[Yes]] #t\r\n"
    note = parse_note("n.md", text)
    assert [(lk.target, lk.line) for lk in note.links] == [("Yes", 9)]


def test_random_markup_never_raises() -> None:
    pieces = ["[[", "]]", "](", "[", "]", "(", ")", "`", "```", "~~~", "$", "$$", "%%", "<!--",
              "-->", "\\", "#", "|", "::", "!", "\n", "\n\n", " ", "a", "---\n", "- [ ] ", "> ",
              "é", "\r\n", "#t", "http:"]  # fmt: skip
    rng = random.Random(20240721)
    for _ in range(500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        note = parse_note("n.md", text)
        json.dumps(note.frontmatter, allow_nan=False)
        assert all(0 <= lk.line <= text.count("\n") for lk in note.links)


def test_large_note_completes() -> None:
    # ~5 MB mixing prose, links, tags, code, comments, math and unclosed openers: the point is
    # that every scan stays linear, so this finishes; no timing is asserted.
    chunk = (
        "Prose with a [[Link|alias]], a [md](Other%20Note.md#H) and #tag/nested. "
        "`code [[no]]` $x^2$ costs $5 %%note%% <!-- c --> \\#no ~~s~~ up:: [[Rel]]\n"
        "- [ ] task #t ![[img.png]] [a:: [[B]]] unmatched ` and $ and [[ and ](\n\n"
    )
    text = chunk * (5_000_000 // len(chunk)) + "```\nunclosed fence [[no]]\n"
    note = parse_note("big.md", text)
    assert note.tasks_open == 5_000_000 // len(chunk)
    assert {"tag/nested", "t"} <= set(note.tags)
