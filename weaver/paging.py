"""One page of a longer answer, and the arithmetic every paged answer shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


def has_more(offset: int, shown: int, total: int) -> bool:
    """Whether items lie beyond a page of `shown` items starting at `offset` of `total`."""
    return offset + shown < total


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """`items` of `total`, starting at `offset`; `limit` is what was asked (None: no limit)."""

    items: list[T]
    total: int
    offset: int = 0
    limit: int | None = None

    @property
    def has_more(self) -> bool:
        return has_more(self.offset, len(self.items), self.total)

    @property
    def next_offset(self) -> int:
        """The offset that asks for the page after this one."""
        return self.offset + len(self.items)


def page_of(items: Sequence[T], offset: int, limit: int) -> Page[T]:
    """The page of an in-memory list."""
    return Page(list(items[offset : offset + limit]), len(items), offset, limit)
