"""Argument types for the counts a command takes (`--limit`, `--offset`): a negative or zero
page size is refused by argparse, naming the flag, instead of printing a strange page."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _whole(text: str, least: int, most: int | None = None) -> int:
    try:
        number = int(text)
    except ValueError:
        number = least - 1
    if number < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least {least}")
    if most is not None and number > most:
        raise argparse.ArgumentTypeError(f"{text!r} is more than {most}, the most one page holds")
    return number


def positive(text: str) -> int:
    """A page size: 1 or more."""
    return _whole(text, 1)


def page_size(most: int) -> Callable[[str], int]:
    """A page size from 1 to `most`: above it, the query would clamp it silently, and the
    person would read a shorter page than they asked for without knowing why."""

    def size(text: str) -> int:
        return _whole(text, 1, most)

    size.__name__ = "page size"  # argparse names the type in its "invalid ... value" message
    return size


def non_negative(text: str) -> int:
    """How many to skip: 0 or more."""
    return _whole(text, 0)
