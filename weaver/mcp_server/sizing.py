"""How big an answer is for a model's context window, and how to keep a page of text within it.

Clients count the tokens of a tool's answer (Claude Code warns above 25,000) with a tokenizer
this machine does not have offline, so Weaver estimates, erring on the side of more tokens:

- an ASCII character is a third of a token (tokenizers average about four characters per token
  on English prose and a little over three on JSON full of paths and punctuation);
- any other character is two tokens (a CJK character is one or two; an emoji, or a rare
  character broken into bytes, can be more, but such text is never all rare characters);
- text that travels inside a JSON string costs its escapes too: `\\n`, `\\"`, `\\\\`, `\\t`
  and `\\r` one character more, other control characters five more (`\\u0001`).

`estimate_tokens` is the measure the size test applies to every default answer;
`fit_text` cuts a page of a note so that it stays within a budget of it.
"""

from __future__ import annotations

import json
import re
from typing import Any

# What a client accepts without complaint for one tool answer.
ANSWER_TOKEN_BOUND = 25_000
# A page of text (get_file_content) stays under this, leaving room for the rest of the answer.
TEXT_TOKEN_BUDGET = 20_000

ASCII_CHARS_PER_TOKEN = 3
TOKENS_PER_OTHER_CHAR = 2
_SHORT_ESCAPE = re.compile(r'["\\\n\r\t]')
_LONG_ESCAPE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def estimate_tokens(text: str) -> int:
    """A conservative token count of `text` as written (e.g. an answer's JSON)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    other = len(text) - ascii_chars
    return -(-ascii_chars // ASCII_CHARS_PER_TOKEN) + other * TOKENS_PER_OTHER_CHAR


def estimate_json_string_tokens(text: str) -> int:
    """The tokens of `text` once written as a JSON string, escapes included."""
    escapes = len(_SHORT_ESCAPE.findall(text)) + 5 * len(_LONG_ESCAPE.findall(text))
    return estimate_tokens(text) + -(-escapes // ASCII_CHARS_PER_TOKEN)


def fit_text(text: str, budget: int = TEXT_TOKEN_BUDGET) -> int:
    """How many of `text`'s leading characters fit in `budget` tokens as a JSON string.

    All of it when it fits; otherwise the longest prefix that does (a binary search: each probe
    is a few C-speed passes over at most the page)."""
    if estimate_json_string_tokens(text) <= budget:
        return len(text)
    low, high = 0, len(text)  # text[:low] fits, text[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if estimate_json_string_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle
    return low


def fitted(text: str | None) -> tuple[str | None, bool]:
    """`text` cut to what fits in an answer (`fit_text`), and whether it was cut."""
    if text is None:
        return None, False
    keep = fit_text(text)
    return text[:keep], keep < len(text)


def fitting_items(items: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The first of `items` whose JSON fits in `budget` tokens, at least one (a page of big
    items is cut short; its answer says where to go on)."""
    used = 0
    for kept, item in enumerate(items):
        used += estimate_tokens(json.dumps(item, ensure_ascii=False))
        if used > budget and kept > 0:
            return items[:kept]
    return items
