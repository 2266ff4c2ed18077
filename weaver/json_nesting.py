"""How deeply a JSON text nests, told without parsing it.

Parsers recurse once per level (the stdlib's `json`, the SDK's): a request body nested
200,000 deep raised `RecursionError` in them, a 500. Every edge that parses JSON from outside
(the MCP endpoint's guard, the dashboard's workflow input, `weaver trigger --input`) refuses a
text nested deeper than `MAX_JSON_DEPTH` first, as invalid JSON.

The scan is linear and runs in C: a text with no more brackets than the limit cannot nest
deeper (two counts, the common case); otherwise escapes are dropped and strings cut out with
`bytes` methods, and the running depth of the brackets left is a numpy cumulative sum.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on the first deep-looking text: not to start a server
    import numpy as np

MAX_JSON_DEPTH = 512  # arrays and objects within each other; no MCP message needs as many

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


@functools.cache
def _steps() -> np.ndarray[Any, np.dtype[np.int8]]:
    """What each byte adds to the depth: 1 for an opening bracket, -1 for a closing one."""
    import numpy as np

    steps = np.zeros(256, dtype=np.int8)
    steps[list(b"[{")] = 1
    steps[list(b"]}")] = -1
    return steps


class JSONTooDeepError(ValueError):
    """A JSON text nested deeper than `MAX_JSON_DEPTH`: taken for invalid JSON."""

    def __init__(self, limit: int = MAX_JSON_DEPTH) -> None:
        super().__init__(f"nested deeper than {limit} levels")


def json_depth(text: bytes | str) -> int:
    """The deepest nesting of arrays and objects in `text` (0 for a scalar); brackets inside
    strings do not count. For any text, JSON or not."""
    import numpy as np

    data = _bytes_of(text)
    # Escaped backslashes first, so that `\\"` keeps its quote and `\\\"` loses it.
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside_strings = b"".join(unescaped.split(b'"')[::2])
    brackets = np.frombuffer(outside_strings.translate(None, _NOT_BRACKETS), dtype=np.uint8)
    return int(_steps()[brackets].cumsum(dtype=np.int32).max(initial=0))


def too_deep(text: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    data = _bytes_of(text)
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    return json_depth(data) > limit


def load_json(text: bytes | str, limit: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads`, refusing a text nested deeper than `limit` with `JSONTooDeepError` (a
    `ValueError`, as `json.JSONDecodeError` is) before parsing it."""
    if too_deep(text, limit):
        raise JSONTooDeepError(limit)
    return json.loads(text)


def _bytes_of(text: bytes | str) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
