"""Weaver's exceptions: one tree, translated to exit codes or MCP envelopes at the edges only.

WeaverError
├── ConfigError            bad config file, unknown key, missing vault
│   └── StatusSettingsError  the Tasks plugin's data.json is broken (tasks.statuses)
├── TaskQueryError         a Tasks query line Weaver cannot read (names the line)
├── BaseExpressionError    a Bases expression that cannot be parsed or evaluated (names the
│                          expression and the character position)
├── BaseFileError          a `.base` file (or ```base block) that is not a base: names the YAML
│                          place ("views[1].sort[0]") and what is wrong there
├── CanvasError            a `.canvas` file and what is asked of it
│   ├── InvalidCanvasError   not a JSON Canvas 1.0 document (names each node or edge, field)
│   └── CanvasEditError      an edit the canvas cannot take (an unknown node id, a bad side)
├── CacheError             the SQLite cache cannot be opened, migrated or queried
│   └── RecordsReadOnlyError  a workflow wrote another workflow's records (cache.records)
├── VaultError             a vault path is not acceptable
│   ├── InvalidPathError   outside the vault, ignored folder, not a note ("Invalid path")
│   ├── NoteNotFoundError  no such note ("File not found")
│   ├── FolderNotFoundError  no such folder ("Folder not found")
│   ├── NoteDecodeError    the file is not UTF-8
│   ├── NoteTooLargeError  the file is bigger than any note Weaver reads
│   └── NoFilesError       a process without the files was asked for a note's file
├── DaemonError            a second daemon on the same vault, and the like
├── ServiceError           `weaver service`: no service manager here, or one of its commands
│                          failed (names the command and what it printed)
├── OAuthRequestError      an OAuth authorization request the consent page cannot take
├── AccessDeniedError      a remote client asked for a note outside its folders (names the
│                          `access` rule and its globs)
├── AuditQueryError        a filter of the audit log that cannot be read (weaver.edits.audit)
├── SemanticUnavailableError  semantic search not installed, or its model cannot load
│   └── ModelLoadingError  the model is being built or loaded: not ready yet, with progress
└── CallTimeoutError       an MCP tool call ran past `tool_timeout_s` and was stopped
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


class WeaverError(Exception):
    """Root of every error Weaver raises on purpose."""


class ConfigError(WeaverError):
    """The configuration cannot be used as given."""


class OAuthRequestError(WeaverError):
    """An authorization request the consent page cannot take: an unknown client, a redirect
    URI it did not register, a scope or resource this server does not grant."""


class AccessDeniedError(WeaverError):
    """A note outside the folders the caller's `access` rule lets it read or write."""


class TaskQueryError(WeaverError):
    """A line of a Tasks plugin query that Weaver does not support: never skipped, since a
    filter dropped silently would answer a different question."""

    def __init__(self, number: int, line: str, reason: str) -> None:
        super().__init__(f"line {number}: {reason}: '{line}'")
        self.number = number
        self.line = line


class BaseExpressionError(WeaverError):
    """A Bases filter or formula that cannot be read or evaluated: never taken as true, false
    or empty, since a filter dropped silently would answer a different question. `position`
    is the 0-based character in `expression` where the fault lies."""

    def __init__(self, expression: str, position: int, message: str) -> None:
        super().__init__(f"expression '{expression}' at {position}: {message}")
        self.expression = expression
        self.position = position
        self.message = message


class BaseFileError(WeaverError):
    """A `.base` file or ```base block Weaver cannot read as a base: bad YAML, a misplaced key,
    a view naming a summary that does not exist. `where` is the place in the YAML
    (`views[1].sort[0]`, `filters.and[2]`, `formulas.ppu`), so the user can find it."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"base file, {where}: {message}")
        self.where = where
        self.message = message


class CanvasError(WeaverError):
    """A `.canvas` file, or an edit asked of one, that Weaver cannot take."""


class InvalidCanvasError(CanvasError):
    """The file does not hold a JSON Canvas 1.0 document: each problem names the node or edge
    (its id and place) and the field, the first few in the message."""

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        shown = "; ".join(problems[:MAX_PROBLEMS])
        more = len(problems) - MAX_PROBLEMS
        rest = f"; and {more} more" if more > 0 else ""
        super().__init__(f"Invalid canvas: {path!r}: {shown}{rest}")
        self.path = path
        self.problems = tuple(problems)


# A broken canvas can have a problem on every node: the first few say what is wrong.
MAX_PROBLEMS = 5


class CanvasEditError(CanvasError):
    """An edit the canvas cannot take; nothing was changed."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Cannot edit the canvas: {reason}")


class CacheError(WeaverError):
    """The cache database cannot be opened, migrated or queried."""


class VaultError(WeaverError):
    """A request names a vault path that cannot be served."""


class InvalidPathError(VaultError):
    """The path escapes the vault, is ignored, or is not a note."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Invalid path: {path!r} ({reason})")
        self.path = path
        self.reason = reason


class NoteNotFoundError(VaultError):
    """No note exists at that path."""

    def __init__(self, path: str) -> None:
        super().__init__(f"File not found: {path!r}")
        self.path = path


class FolderNotFoundError(VaultError):
    """A folder filter names no folder of the vault (`close`: those it probably meant)."""

    def __init__(self, folder: str, close: Sequence[str] = ()) -> None:
        hint = f" ({did_you_mean(close)})" if close else ""
        super().__init__(f"Folder not found: {folder!r}{hint}")
        self.folder = folder


class NoteDecodeError(VaultError):
    """The note's bytes are not valid UTF-8."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"File is not valid UTF-8: {path!r} ({detail})")
        self.path = path


class NoteTooLargeError(VaultError):
    """The file is bigger than `vault.MAX_NOTE_BYTES`: Weaver neither reads nor serves it."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"File too large: {path!r} ({too_large(size, limit)})")
        self.path = path
        self.size = size


class NoFilesError(VaultError):
    """A process without the vault's files (a reader, `weaver serve --no-vault`; a worker on
    a host without them) was asked for what needs a note's file (its full text, a write)."""

    READER = (
        "this server is a reader (weaver serve --no-vault): it answers from the cache alone, "
        "which keeps no note's full text; ask the writer (weaver daemon, or weaver serve with "
        "the vault's files)"
    )

    def __init__(self, what: str, why: str = READER) -> None:
        super().__init__(f"{what} needs the note's file, and {why}")


MAX_SUGGESTIONS = 3


def suggest(
    typed: str, known: Iterable[str], cutoff: float = 0.6, n: int = MAX_SUGGESTIONS
) -> list[str]:
    """What a misspelt name probably meant, best first: the one suggester behind every "did you
    mean" (notes' folders, tags, sections, workflows, tools). The same name in another case
    (alone: nothing else is as likely); else a name whose last `/` part is it (`projects`
    for `work/projects`), then names holding it (`digest` in `daily-digest`), then close
    spellings (difflib, ignoring case)."""
    names = sorted(set(known))
    folded = typed.strip().casefold()
    if not folded:
        return []
    by_fold: dict[str, list[str]] = {}
    for name in names:
        by_fold.setdefault(name.casefold(), []).append(name)
    same = [name for name in by_fold.get(folded, []) if name != typed]
    if same:  # only the case was wrong: nothing else is as likely
        return same[:n]
    last = [name for name in names if name.rsplit("/", 1)[-1].casefold() == folded]
    holding = [name for name in names if len(folded) > 2 and folded in name.casefold()]
    close = difflib.get_close_matches(folded, list(by_fold), n=n, cutoff=cutoff)
    spelt = [name for key in close for name in by_fold[key]]
    found = [name for name in dict.fromkeys([*last, *holding, *spelt]) if name != typed]
    return found[:n]


def did_you_mean(candidates: Sequence[str]) -> str:
    """`did you mean 'a.md', 'b.md' or 'c.md'?`: what a misspelt name probably meant."""
    quoted = [repr(candidate) for candidate in candidates]
    options = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f"did you mean {options}?"


def too_large(size: int, limit: int) -> str:
    """`67,108,865 bytes; notes over 64 MiB are not read`: why a file was left unread."""
    return f"{size:,} bytes; notes over {limit / (1 << 20):g} MiB are not read"


class DaemonError(WeaverError):
    """The daemon cannot start or run as asked."""


class ServiceError(WeaverError):
    """The daemon cannot be installed as a service, or removed: the platform's service manager
    is missing or not running for this user, or one of its commands failed."""


class SemanticUnavailableError(WeaverError):
    """Semantic search cannot run: the extra is not installed or the model cannot load."""


class ModelLoadingError(SemanticUnavailableError):
    """The embedding model is being built or loaded; `progress` says how far it is
    ("building the embedding model, 40 %"). Searches answer with what is ready meanwhile."""

    def __init__(self, progress: str) -> None:
        super().__init__(f"not ready yet: {progress}; try again shortly")
        self.progress = progress


class CallTimeoutError(WeaverError):
    """A tool call that ran past its deadline: answered as an error, its queries stopped."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"Timed out: the call took longer than {seconds:g} s and was stopped "
            "(narrow it, e.g. a smaller limit or a more specific query, or raise tool_timeout_s)"
        )
