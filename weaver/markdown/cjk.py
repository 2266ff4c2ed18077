"""Text written without spaces between words (Chinese, Japanese), made searchable by word tools.

FTS5's tokenizers split on spaces and punctuation, so a run of Han or kana characters would be
one token and found only whole. `segment` makes each such character a token of its own by
putting zero-width spaces around it; `unsegment` takes them out of text shown to people. Pure
text functions, so that the parse worker can segment a note's body as it parses it.
"""

from __future__ import annotations

import re

# Han, kana, CJK symbols and punctuation, half/full-width forms: written without spaces.
_CJK = re.compile(
    "([\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f])"
)
SEGMENT_MARK = "\u200b"


def segment(text: str) -> str:
    """`text` with each CJK character a token of its own (zero-width spaces around it); `text`
    itself, the same object, when it has none."""
    if text.isascii():
        return text
    return _CJK.sub(SEGMENT_MARK + r"\1" + SEGMENT_MARK, text)


def unsegment(text: str) -> str:
    return text.replace(SEGMENT_MARK, "") if not text.isascii() else text


def has_cjk(text: str) -> bool:
    return not text.isascii() and _CJK.search(text) is not None
