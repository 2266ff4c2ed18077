"""Every supported function, with expected values written from the help's Functions page (its
examples where it gives one), and the table of documented functions kept honest."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from tests.bases.facts import Facts, env, value
from weaver.bases import SUPPORTED_FUNCTIONS, UNSUPPORTED_FUNCTIONS, Date, Duration, Link, Markup
from weaver.bases.functions import DOCUMENTED_FUNCTIONS
from weaver.bases.values import File, Value

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bases.md"
TODAY = Date(dt.datetime(2025, 5, 27), has_time=False)
NOW = Date(dt.datetime(2025, 5, 27, 12, 0), has_time=True)

# The help's "max" example for reduce().
MAX_BY_REDUCE = (
    '[3,"x",9,4].filter(value.isType("number"))'
    ".reduce(if(acc == null || value > acc, value, acc), null)"
)

CASES: list[tuple[str, Value]] = [
    # global
    ('escapeHTML("<b>Tom & Jerry</b>")', "&lt;b&gt;Tom &amp; Jerry&lt;/b&gt;"),
    ('date("2025-01-01 12:00:00")', Date(dt.datetime(2025, 1, 1, 12), has_time=True)),
    ('date("2025-05-27")', Date(dt.datetime(2025, 5, 27), has_time=False)),
    ('duration("2 weeks")', Duration(millis=14 * 86_400_000)),
    ("duration('5h') * 2", Duration(millis=10 * 3_600_000)),
    ('html("<i>x</i>")', Markup("html", "<i>x</i>")),
    ('if(true, "Modified", "Unmodified")', "Modified"),
    ('if(0, "yes", "no")', "no"),
    ('if(false, "yes")', None),
    ('image("https://example.org/a.svg")', Markup("image", "https://example.org/a.svg")),
    ('icon("arrow-right")', Markup("icon", "arrow-right")),
    ('link("filename")', Link("filename")),
    ('link("[[Projects/Plan|the plan]]")', Link("Projects/Plan", "the plan")),
    ('link("filename", "display")', Link("filename", "display")),
    ('list("value")', ["value"]),
    ("list([1, 2])", [1, 2]),
    ("max(3, 7, 5)", 7),
    ("min(3, 7, 5)", 3),
    ("now()", NOW),
    ('number("3.4")', 3.4),
    ("number(true)", 1),
    ('number(date("1970-01-02 00:00:00")) - number(date("1970-01-01 00:00:00"))', 86_400_000),
    ("today()", TODAY),
    ("random()", 0.25),
    # any
    ("1.isTruthy()", True),
    ('"".isTruthy()', False),
    ('"example".isType("string")', True),
    ('true.isType("boolean")', True),
    ('[1].isType("list")', True),
    ("123.toString()", "123"),
    ("[1, 2.5].toString()", "1, 2.5"),
    # date
    ('date("2025-05-27 15:04:05").year', 2025),
    ('date("2025-05-27 15:04:05").month', 5),
    ('date("2025-05-27 15:04:05").day', 27),
    ('date("2025-05-27 15:04:05").hour', 15),
    ('date("2025-05-27 15:04:05").minute', 4),
    ('date("2025-05-27 15:04:05").second', 5),
    ('date("2025-05-27 15:04:05.250").millisecond', 250),
    ('now().date().format("YYYY-MM-DD HH:mm:ss")', "2025-05-27 00:00:00"),
    ('date("2025-05-27").format("YYYY-MM-DD")', "2025-05-27"),
    ('date("2025-05-27").format("dddd, MMMM Do")', "Tuesday, May 27th"),
    ('date("2025-05-27 23:59:59").time()', "23:59:59"),
    ("file.mtime.relative()", "2 days ago"),
    ('(now() + "3h").relative()', "in 3 hours"),
    ("now().isEmpty()", False),
    # string
    ('"hello".length', 5),
    ('"hello".contains("ell")', True),
    ('"hello".containsAll("h", "e")', True),
    ('"hello".containsAll("h", "z")', False),
    ('"hello".containsAny("x", "y", "e")', True),
    ('"hello".endsWith("lo")', True),
    ('"Hello world".isEmpty()', False),
    ('"".isEmpty()', True),
    ('"HeLLo".lower()', "hello"),
    ('"a:b:c:d".replace(":", "-")', "a-b-c-d"),
    ('"a:b:c:d".replace(/:/, "-")', "a-b:c:d"),
    ('"a:b:c:d".replace(/:/g, "-")', "a-b-c-d"),
    ('"John Smith".replace(/(\\w+) (\\w+)/, "$2, $1")', "Smith, John"),
    ('"123".repeat(2)', "123123"),
    ('"hello".reverse()', "olleh"),
    ('"hello".slice(1, 4)', "ell"),
    ('"hello".slice(1)', "ello"),
    ('"hello".slice(-3)', "llo"),
    ('"a,b,c,d".split(",", 3)', ["a", "b", "c"]),
    ('"a,b,c,d".split(/,/, 3)', ["a", "b", "c"]),
    ('"a, b".split(",")', ["a", " b"]),
    ('"hello".startsWith("he")', True),
    ('"hello world".title()', "Hello World"),
    ('"  hi  ".trim()', "hi"),
    # number
    ("(-5).abs()", 5),
    ("(2.1).ceil()", 3),
    ("(2.9).floor()", 2),
    ("5.isEmpty()", False),
    ("(2.5).round()", 3),
    ("(-2.5).round()", -2),
    ("(2.3333).round(2)", 2.33),
    ("(3.14159).toFixed(2)", "3.14"),
    ("(1.005).toFixed(2)", "1.00"),  # 1.005 is a little under 1.005 in binary, as in JavaScript
    ("(0.125).toFixed(2)", "0.13"),  # an exact tie goes up, as in JavaScript
    # list
    ("[1,2,3].length", 3),
    ("[1,2,3].contains(2)", True),
    ('[1,2,3].contains("2")', False),
    ("[1,2,3].containsAll(2,3)", True),
    ("[1,2,3].containsAny(3,4)", True),
    ("[1,2,3].containsAny(4,5)", False),
    ("[1,2,3,4].filter(value > 2)", [3, 4]),
    ("[5,6,7].filter(index != 1)", [5, 7]),
    ("[1,[2,3]].flat()", [1, 2, 3]),
    ("[1,2,3].isEmpty()", False),
    ("[].isEmpty()", True),
    ('[1,2,3].join(",")', "1,2,3"),
    ("[1,2,3,4].map(value + 1)", [2, 3, 4, 5]),
    ("[1,2,3].reduce(acc + value, 0)", 6),
    (MAX_BY_REDUCE, 9),
    ("[1,2,3].reverse()", [3, 2, 1]),
    ("[1,2,3,4].slice(1,3)", [2, 3]),
    ("[1,2,3,4].slice(2)", [3, 4]),
    ("[3, 1, 2].sort()", [1, 2, 3]),
    ('["c", "a", "b"].sort()', ["a", "b", "c"]),
    ("[10, 9, 100].sort()", [9, 10, 100]),
    ("[1,2,2,3].unique()", [1, 2, 3]),
    ("[1, null, 2, 6].mean()", 3),
    ("[].mean()", None),
    # link
    ('link("Books/Textbook").asFile().name', "Textbook.md"),
    ('link("Nowhere").asFile()', None),
    ('link("Books/Textbook").linksTo(file)', True),
    ('link("Books/Textbook").linksTo("Elsewhere")', False),
    # file
    ("file.asLink()", Link("Projects/Plan.md")),
    ('file.asLink("the plan")', Link("Projects/Plan.md", "the plan")),
    ('file.hasLink("Textbook")', True),
    ('file.hasLink("Books/Textbook")', True),
    ('file.hasLink(link("Books/Textbook"))', True),
    ('file.hasLink("[[Textbook|the book]]")', True),
    ('file.hasLink("[[Books/Textbook#Chapter 1]]")', True),
    ('file.hasLink("Plan")', False),
    ('file.hasProperty("status")', True),
    ('file.hasProperty("rating")', False),
    ('file.hasTag("book")', True),
    ('file.hasTag("fiction")', False),
    ('file.hasTag("nothing", "#project")', True),
    ('file.hasTag("boo")', False),
    ('file.inFolder("Projects")', True),
    ('file.inFolder("Proj")', False),
    ('file("Books/Textbook").path', "Books/Textbook.md"),
    ('file(link("Books/Textbook")).basename', "Textbook"),
    # object
    ("{}.isEmpty()", True),
    ('{"a": 1, "b": 2}.keys()', ["a", "b"]),
    ('{"a": 1, "b": 2}.values()', [1, 2]),
    # regexp
    ('/abc/.matches("abcde")', True),
    ('/^b/i.matches("Abc")', False),
    ('/^a/i.matches("Abc")', True),
]

TEXTBOOK = Facts(path="Books/Textbook.md", links=("Projects/Plan.md",), tags=())
PLAN = Facts(properties={"status": "active"})


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_each_documented_function_gives_the_documented_value(text: str, expected: Value) -> None:
    assert value(text, PLAN, env(files=(TEXTBOOK, PLAN))) == expected


def test_every_supported_function_is_in_the_table_above() -> None:
    called = {name for text, _ in CASES for name in re.findall(r"(\w+)\(", text)}
    fields = {"year", "month", "day", "hour", "minute", "second", "millisecond", "length"}
    assert {qualified.split(".")[1] for qualified in SUPPORTED_FUNCTIONS} <= called
    assert fields <= {name for text, _ in CASES for name in re.findall(r"\.(\w+)$", text)}


def test_the_documented_functions_are_all_supported() -> None:
    supported, unsupported = SUPPORTED_FUNCTIONS, UNSUPPORTED_FUNCTIONS
    assert (supported, unsupported) == (frozenset(DOCUMENTED_FUNCTIONS), frozenset())


def test_docs_page_lists_every_documented_function() -> None:
    page = DOCS.read_text(encoding="utf-8")
    missing = [f for f in DOCUMENTED_FUNCTIONS if f"`{f.split('.')[1]}()`" not in page]
    assert missing == []


def test_a_file_value_is_the_row_file() -> None:
    assert value("file", PLAN) == File(PLAN)
