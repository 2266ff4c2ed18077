"""The Chinese paraphrase set: short notes on everyday topics, each with a question asking for
it in other words (`chinese_paraphrases.json`, written for Weaver, not taken from a corpus).

The English set runs over real corpora; no Chinese corpus ships with the tests, so the bench
writes these notes into a vault of its own (`write_vault`) and asks each question there. A
question's answer is its own note, so the other notes are its distractors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SET = Path(__file__).with_name("chinese_paraphrases.json")


@dataclass(frozen=True)
class Paraphrase:
    path: str  # the note, relative to the vault
    text: str  # its markdown
    query: str  # the question that asks for it in other words


def load_set() -> list[Paraphrase]:
    notes = json.loads(SET.read_text(encoding="utf-8"))["notes"]
    return [Paraphrase(n["path"], n["text"], n["query"]) for n in notes]


def write_vault(root: Path) -> list[Paraphrase]:
    """The set's notes written into `root` (made if missing; other files are left alone)."""
    paraphrases = load_set()
    root.mkdir(parents=True, exist_ok=True)
    for p in paraphrases:
        (root / p.path).write_text(p.text, encoding="utf-8")
    return paraphrases
