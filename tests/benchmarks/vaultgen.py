"""Deterministic synthetic vaults: the same seed and size give the same files, byte for byte.

A vault of N notes has nested folders (up to four levels deep), frontmatter with type, status,
tags, aliases and dates on nine notes in ten, nested tags, wikilinks of every form that
`VAULT_SEMANTICS.md` lists (plain, alias, heading, block, self, folder path, embed, markdown,
frontmatter), about 5 % of them broken, 1-3 KB bodies with headings, lists, tasks (about 3 a
note, with the Tasks plugin's emoji dates, priorities and recurrence) and code blocks holding
link-like text that must not count, a few attachments, and a few file names
shared by notes in different folders. Body words follow Zipf's law over a lexicon of the
words below and a few thousand made-up ones, as prose does, so a full-text search for a rare
word matches a few notes and one for a common word most of them. The generator only uses its
own seeded `random.Random`, never the file system's order, so the vault is the same on every
machine.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from itertools import accumulate
from pathlib import Path
from urllib.parse import quote

_WORDS = (
    "cache graph index link note query vault sync parser folder tag alias heading block "
    "embed table schema migration watcher event batch thread engine workflow server client "
    "token latency memory disk page journal review draft idea project meeting person topic "
    "reading summary question answer design decision plan task goal risk issue release bug "
    "feature search filter sort merge split rename delete create update write read open close "
    "start stop retry timeout lock queue worker signal socket stream buffer frame packet "
    "garden forest river mountain ocean island valley desert meadow harbor bridge tower castle "
    "lantern compass anchor violin piano canvas marble copper silver amber cedar maple willow "
    "quick slow bright quiet early late simple clever rough smooth steady fragile hidden open "
    "café naïve Zürich façade crème déjà Ångström smörgåsbord jalapeño piñata"
)
WORDS = tuple(_WORDS.split())
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "ta",
    "vo",
    "shi",
    "pe",
    "zan",
    "tor",
    "bel",
    "quin",
    "dra",
    "fu",
    "gel",
    "hom",
    "ix",
    "wen",
    "yul",
]
LEXICON_SIZE = 4000


def _lexicon() -> tuple[str, ...]:
    """`WORDS` first (the most frequent), then made-up words of two or three syllables."""
    rng = random.Random("weaver-bench:lexicon")
    words = dict.fromkeys(WORDS)
    while len(words) < LEXICON_SIZE:
        words.setdefault("".join(rng.choices(_SYLLABLES, k=rng.choice((2, 3)))))
    return tuple(words)


LEXICON = _lexicon()
# Zipf's law, s = 1: the word of rank r is used in proportion to 1 / r.
_ZIPF = tuple(accumulate(1 / rank for rank in range(1, LEXICON_SIZE + 1)))
# Full-text queries by how many notes they match: a word of rank ~50 is in most notes, one of
# rank ~400 in about one note in ten, one of rank ~3000 in about one in a hundred.
COMMON_WORDS = f"{LEXICON[40]} {LEXICON[60]}"
MIDDLE_WORD = LEXICON[400]
RARE_WORD = LEXICON[3000]
HEADINGS = ("Summary", "Context", "Details", "Open questions", "Next steps", "References")
TYPES = ("note", "note", "note", "project", "concept", "meeting", "person", "reference")
STATUSES = ("active", "active", "draft", "done", "archived", "someday")
TOP_FOLDERS = (
    "projects",
    "areas",
    "resources",
    "archive",
    "people",
    "concepts",
    "meetings",
    "inbox",
    "reading",
)
TAG_ROOTS = ("topic", "project", "area", "ref", "person", "idea", "meeting", "status", "lang")
# Link forms and their share of the links written; "broken" targets a note that never exists.
LINK_FORMS = (
    ("plain", 32),
    ("alias", 14),
    ("heading", 10),
    ("block", 5),
    ("path", 10),
    ("embed", 5),
    ("attachment", 3),
    ("markdown", 9),
    ("markdown_angle", 3),
    ("self", 4),
    ("broken", 5),
)
FIRST_DAY = date(2015, 1, 1)
CODE_BLOCK = "\n```python\n# [[Not a link]] and #not-a-tag in code\nx = 1  # [[nope]]\n```\n"
# Task dates spread around a fixed day (the vault must not depend on when it is made): emoji,
# share of tasks carrying it, days either side.
TASK_ANCHOR = date(2026, 6, 1)
TASK_DATES = (("📅", 0.5, 180), ("⏳", 0.15, 60), ("🛫", 0.1, 60))
TASK_PRIORITIES = ("🔺", "⏫", "🔼", "🔽", "⏬")
TASK_RECURRENCES = ("every day", "every week", "every month on the 1st", "every 2 weeks")
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(56)


@dataclass(frozen=True)
class VaultFacts:
    """What the benchmarks need to know about a generated vault: sizes and good query inputs."""

    notes: int
    attachments: int
    folders: int
    total_bytes: int
    links: int
    broken_links: int
    seed: int
    folder: str  # the folder holding the most notes, for `query_files directory=`
    type: str
    status: str
    tag: str  # a parent tag: a query for it also matches its nested tags
    hub: str  # the most linked-to note, for `search_links` and `get_file`
    sample: tuple[str, ...]  # note paths spread over the vault

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> VaultFacts:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["sample"] = tuple(data["sample"])
        return cls(**data)


@dataclass(frozen=True)
class _Note:
    path: str  # vault-relative, with `.md`
    stem: str  # the file name without `.md`: what a wikilink names


def generate_vault(root: Path, notes: int, seed: int = 7) -> VaultFacts:
    """Write a vault of `notes` notes under `root` (which must be empty or absent)."""
    rng = random.Random(f"weaver-bench:{seed}:{notes}")
    root.mkdir(parents=True, exist_ok=True)
    folders = _folders(rng, notes)
    plan = _plan_notes(rng, notes, folders)
    attachments = [f"attachments/diagram {k}.png" for k in range(max(2, notes // 200))]
    writer = _NoteWriter(rng, plan, attachments)
    total = 0
    for note in plan:
        data = writer.note_text(note).encode("utf-8")
        target = root / note.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        total += len(data)
    for rel in attachments:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(PNG_BYTES)
    return _facts(plan, writer, attachments, folders, total, seed)


def _folders(rng: random.Random, notes: int) -> list[str]:
    """Top-level areas, then sub-folders below random existing folders, up to four levels."""
    folders = list(TOP_FOLDERS)
    wanted = max(len(folders), notes // 40)
    while len(folders) < wanted:
        parent = rng.choice(folders)
        if parent.count("/") >= 3:
            continue
        folders.append(f"{parent}/{rng.choice(WORDS)} {len(folders)}")
    return folders


def _plan_notes(rng: random.Random, notes: int, folders: list[str]) -> list[_Note]:
    """Paths first, so links can name any note. ~8 % daily notes, ~10 % at the root, ~1 %
    sharing a file name with a note in another folder."""
    plan: list[_Note] = []
    used: set[str] = set()
    days = 0
    for i in range(notes):
        roll = rng.random()
        if roll < 0.08:
            day = FIRST_DAY + timedelta(days=days)
            stem, folder = day.isoformat(), f"journal/{day.year}"
            days += 1
        else:
            stem = f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {i}"
            folder = "" if roll < 0.18 else rng.choice(folders)
        if plan and rng.random() < 0.01:
            stem = rng.choice(plan).stem  # the same name in another folder
        path = f"{folder}/{stem}.md" if folder else f"{stem}.md"
        if path in used:
            path = path[:-3] + f" {i}.md"
        used.add(path)
        plan.append(_Note(path=path, stem=path.rpartition("/")[2][:-3]))
    return plan


class _NoteWriter:
    """Writes note text; remembers how many links it wrote and which notes they point at."""

    def __init__(self, rng: random.Random, plan: list[_Note], attachments: list[str]) -> None:
        self.rng = rng
        self.plan = plan
        self.hubs = plan[: max(5, len(plan) // 100)]
        self.attachments = attachments
        self.forms = [form for form, _ in LINK_FORMS]
        self.weights = [weight for _, weight in LINK_FORMS]
        self.tags = _tag_tree(rng)
        self.links = 0
        self.broken = 0
        self.inbound: Counter[str] = Counter()
        self.by_type: Counter[str] = Counter()
        self.by_status: Counter[str] = Counter()
        self.task_lines = 0

    def note_text(self, note: _Note) -> str:
        rng = self.rng
        parts: list[str] = []
        if rng.random() < 0.9:
            parts.append(self._frontmatter(note))
        parts.append(f"# {note.stem}\n")
        size = rng.randint(1024, 3072)
        used = sum(len(p) for p in parts)
        headings = iter(HEADINGS)
        block = 0
        while used < size:
            heading = next(headings, None)
            if heading is not None:
                parts.append(f"\n## {heading}\n")
            block += 1
            section = self._section(note, block)
            parts.append(section)
            used += len(section) + 16
        return "".join(parts)

    def _section(self, note: _Note, block: int) -> str:
        rng = self.rng
        kind = rng.random()
        if kind < 0.15:
            return self._tasks(note)
        if kind < 0.22:
            return CODE_BLOCK
        text = " ".join(self._sentence(note) for _ in range(rng.randint(2, 5)))
        anchor = f" ^b{block}" if rng.random() < 0.2 else ""
        return f"\n{text}{anchor}\n"

    def _tasks(self, note: _Note) -> str:
        lines = []
        for _ in range(self.rng.randint(2, 5)):
            box = "x" if self.rng.random() < 0.4 else " "
            fields = _task_fields(f"{note.path}:{self.task_lines}", done=box == "x")
            self.task_lines += 1
            lines.append(f"- [{box}] {self._sentence(note)}{fields}")
        return "\n" + "\n".join(lines) + "\n"

    def _sentence(self, note: _Note) -> str:
        rng = self.rng
        words = rng.choices(LEXICON, cum_weights=_ZIPF, k=rng.randint(6, 16))
        if rng.random() < 0.45:
            words.insert(rng.randrange(len(words)), self._link(note))
        if rng.random() < 0.12:
            words.insert(rng.randrange(len(words)), "#" + rng.choice(self.tags))
        if rng.random() < 0.05:
            words.append("`[[inline code]]`")
        text = " ".join(words)  # capitalised by hand: str.capitalize() lowercases link targets
        return text[:1].upper() + text[1:] + "."

    def _target(self) -> _Note:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            target = self.hubs[0]
        elif roll < 0.3:
            target = rng.choice(self.hubs)
        else:
            target = rng.choice(self.plan)
        self.inbound[target.path] += 1
        return target

    def _link(self, note: _Note) -> str:
        rng = self.rng
        form = rng.choices(self.forms, self.weights)[0]
        self.links += 1
        if form == "self":
            return f"[[#{rng.choice(HEADINGS)}]]"
        if form == "attachment":
            return f"![[{rng.choice(self.attachments).rpartition('/')[2]}|200]]"
        if form == "broken":
            self.broken += 1
            return f"[[Missing {rng.choice(WORDS)} {rng.randrange(10_000)}]]"
        target = self._target()
        words = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
        match form:
            case "plain":
                return f"[[{target.stem}]]"
            case "alias":
                return f"[[{target.stem}|{words}]]"
            case "heading":
                return f"[[{target.stem}#{rng.choice(HEADINGS)}]]"
            case "block":
                return f"[[{target.stem}#^b{rng.randint(1, 4)}]]"
            case "path":
                return f"[[{target.path[:-3]}]]"
            case "embed":
                return f"![[{target.stem}]]"
            case "markdown":
                return f"[{words}]({quote(target.path)})"
            case _:
                return f"[{words}](<{target.path}>)"

    def _frontmatter(self, note: _Note) -> str:
        rng = self.rng
        kind, status = rng.choice(TYPES), rng.choice(STATUSES)
        self.by_type[kind] += 1
        self.by_status[status] += 1
        tags = sorted({rng.choice(self.tags) for _ in range(rng.randint(1, 4))})
        lines = ["---", f"title: {note.stem}", f"type: {kind}", f"status: {status}"]
        if rng.random() < 0.1:
            lines.append(f"tags: {tags[0]}")
        else:
            lines += ["tags:", *(f"  - {tag}" for tag in tags)]
        if rng.random() < 0.3:
            lines.append(f"aliases: [{rng.choice(WORDS)} {rng.choice(WORDS)}]")
        lines.append(f"created: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
        lines.append(f"updated: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
        if rng.random() < 0.2:
            self.links += 1
            lines.append(f'categories: "[[{self._target().stem}]]"')
        if rng.random() < 0.15:
            self.links += 2
            lines += ["related:", *(f'  - "[[{self._target().stem}]]"' for _ in range(2))]
        lines.append("---\n")
        return "\n".join(lines)


def _task_fields(key: str, done: bool) -> str:
    """The Tasks plugin's emoji fields of one task line: priority, due, scheduled, start,
    recurrence, done date. From a generator of its own, seeded by the line: the vault's own
    generator draws what it drew before (its notes only end sooner, their task lines longer)."""
    rng = random.Random(f"weaver-bench-task:{key}")
    fields = []
    if rng.random() < 0.3:
        fields.append(rng.choice(TASK_PRIORITIES))
    for emoji, share, spread in TASK_DATES:
        if rng.random() < share:
            fields.append(f"{emoji} {TASK_ANCHOR + timedelta(days=rng.randint(-spread, spread))}")
    if rng.random() < 0.08:
        fields.append(f"🔁 {rng.choice(TASK_RECURRENCES)}")
    if done:
        fields.append(f"✅ {TASK_ANCHOR - timedelta(days=rng.randint(0, 365))}")
    return "".join(f" {field}" for field in fields)


def _tag_tree(rng: random.Random) -> list[str]:
    """~200 tags: roots, children, grandchildren (`topic/db/sqlite`), a few non-ASCII."""
    tags: list[str] = []
    for root in TAG_ROOTS:
        tags.append(root)
        for child in rng.sample(WORDS, 6):
            tags.append(f"{root}/{child}")
            tags += [f"{root}/{child}/{leaf}" for leaf in rng.sample(WORDS, 3)]
    return tags


def _facts(
    plan: list[_Note],
    writer: _NoteWriter,
    attachments: list[str],
    folders: list[str],
    total: int,
    seed: int,
) -> VaultFacts:
    per_folder = Counter(n.path.rpartition("/")[0] for n in plan if "/" in n.path)
    paths = sorted(n.path for n in plan)
    step = max(1, len(paths) // 50)
    return VaultFacts(
        notes=len(plan),
        attachments=len(attachments),
        folders=len(folders),
        total_bytes=total,
        links=writer.links,
        broken_links=writer.broken,
        seed=seed,
        folder=per_folder.most_common(1)[0][0],
        type="project",
        status="active",
        tag="topic",
        hub=writer.inbound.most_common(1)[0][0],
        sample=tuple(paths[::step][:50]),
    )
