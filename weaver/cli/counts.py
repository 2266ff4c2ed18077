"""Argument types for the counts a command takes (`--limit`, `--offset`): a negative or zero
page size is refused by argparse, naming the flag, instead of printing a strange page."""

from __future__ import annotations

import argparse


def _whole(text: str, least: int) -> int:
    try:
        number = int(text)
    except ValueError:
        number = least - 1
    if number < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least {least}")
    return number


def positive(text: str) -> int:
    """A page size: 1 or more."""
    return _whole(text, 1)


def non_negative(text: str) -> int:
    """How many to skip: 0 or more."""
    return _whole(text, 0)
