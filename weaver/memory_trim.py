"""Giving freed heap memory back to the system after a burst of work.

glibc's allocator keeps the memory a process freed for its next allocations: after the first
index of a big vault or an embedding pass, a daemon that then sits idle all day would hold the
peak it reached (tens of megabytes of parsed notes and rows, long since freed). `malloc_trim`
returns the free pages at the top of each arena and, since glibc 2.8, the free pages inside
them. Only on Linux with glibc: elsewhere (macOS, Windows, musl) there is no such call and
`trim_heap` does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any


@cache
def _malloc_trim() -> Any | None:
    """glibc's `malloc_trim`, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def can_trim() -> bool:
    """Whether this process's allocator can give memory back (`trim_heap` does something)."""
    return _malloc_trim() is not None


def trim_heap() -> bool:
    """Give the allocator's free memory back to the system; True if some was. Takes a few
    milliseconds on a big heap: call it after a burst of work, not per call."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
