"""Small in-memory vaults for the `.base` tests: each file's facts, written so that the help's
example bases pick known rows."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.bases.facts import Facts

TEXTBOOK = ("Textbook.md",)


def _book(name: str, links: tuple[str, ...] = TEXTBOOK, **properties: object) -> Facts:
    return Facts(path=f"Books/{name}.md", tags=("book",), links=links, properties=properties)


def _note(path: str, tags: tuple[str, ...] = (), **properties: object) -> Facts:
    return Facts(path=path, tags=tags, links=(), properties=properties)


@pytest.fixture
def library() -> tuple[Facts, ...]:
    """For the "Bases syntax" page's example base: books linking the textbook, tagged notes,
    notes outside both, and one in "Required Reading"."""
    return (
        _book("Dune", price=12, age=2, status="reading"),
        _book("Emma", price=3, age=1, status="done"),
        _book("Hamlet", price=4, age=2, status="to read"),
        _book("Free", price=0, age=4, status="reading"),
        _book("Unlinked", links=(), price=30, age=1),
        _note("Notes/Tagged.md", tags=("tag",), price=2, age=2),
        _note("Notes/Cheap.md", tags=("tag",), price=2.5),
        _note("Notes/Loose.md", price=20, age=3),
        _note("Required Reading/Old.md", price=50, age=5),
    )


@pytest.fixture
def reading() -> tuple[Facts, ...]:
    """For the "Views" page's "Reading list" and "Recently finished": books with a status, a
    rating, a finished date (one finished book lacks it), and a note outside Books."""
    return (
        _note("Books/A Wizard of Earthsea.md", status="to read"),
        _note("Books/Beloved.md", status="finished", finished="2025-04-10", rating=5),
        _note("Books/Circe.md", status="finished", finished="2025-05-20", rating=4),
        _note("Books/Dracula.md", status="finished", rating=4),
        _note("Books/Emma.md", status="reading", rating=3),
        _note("Journal/2025-05-01.md", status="finished", finished="2025-05-01"),
    )


@pytest.fixture
def mixed() -> tuple[Facts, ...]:
    """One property holding a value of every sortable type, and notes without it."""
    values: dict[str, object] = {
        "a": 10,
        "b": "apple",
        "c": True,
        "d": dt.date(2025, 1, 2).isoformat(),
        "e": None,
        "f": "Banana",
        "g": 3,
        "h": "",
        "i": 3,
    }
    return tuple(_note(f"{name}.md", value=value) for name, value in values.items())
