"""Daily notes and templates, following the vault's own Obsidian settings.

`.obsidian/daily-notes.json` (core Daily notes plugin): `folder`, `format` (moment.js tokens,
may hold '/' for subfolders), `template` (a note path without `.md`); Obsidian's defaults when
the file or a key is absent: the vault root, `YYYY-MM-DD`, no template.
`.obsidian/templates.json` (core Templates plugin): `folder`, `dateFormat`, `timeFormat`
(defaults `YYYY-MM-DD`, `HH:mm`). A daily note made from its template gets `{{date}}` as the
note's own date in the daily format and `{{time}}` as now, as the Daily notes plugin does.
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from weaver.edits.notes import CacheSync, NoteEditError, create_note, sha256
from weaver.edits.patches import Patched, changed_once, decode_text, patch_note
from weaver.edits.steps import Notes
from weaver.errors import NoteNotFoundError, VaultError
from weaver.markdown import patch
from weaver.markdown.dates import (
    DEFAULT_DATE_FORMAT,
    DEFAULT_TIME_FORMAT,
    format_moment,
    render_template,
)
from weaver.vault.fs import Vault

DAILY_SETTINGS = ".obsidian/daily-notes.json"
TEMPLATE_SETTINGS = ".obsidian/templates.json"


@dataclass(frozen=True, slots=True)
class DailySettings:
    folder: str = ""
    format: str = DEFAULT_DATE_FORMAT
    template: str = ""


@dataclass(frozen=True, slots=True)
class TemplateSettings:
    folder: str = ""
    date_format: str = DEFAULT_DATE_FORMAT
    time_format: str = DEFAULT_TIME_FORMAT


@dataclass(frozen=True, slots=True)
class DailyNote:
    path: str
    date: str  # ISO date
    exists: bool
    content: str | None
    content_hash: str | None


@dataclass(frozen=True, slots=True)
class DailyAppend:
    patched: Patched
    created: bool  # the note did not exist and was made (from its template, if any)


def _read_settings(vault: Vault, name: str) -> dict[str, Any]:
    try:
        raw = (vault.root / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise NoteEditError(f"cannot read {name}: {exc}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NoteEditError(f"{name} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return data if isinstance(data, dict) else {}


def _text(data: dict[str, Any], key: str, default: str) -> str:
    value = data.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else default


def read_daily_settings(vault: Vault) -> DailySettings:
    data = _read_settings(vault, DAILY_SETTINGS)
    return DailySettings(
        folder=_text(data, "folder", "").strip("/"),
        format=_text(data, "format", DEFAULT_DATE_FORMAT),
        template=_text(data, "template", ""),
    )


def read_template_settings(vault: Vault) -> TemplateSettings:
    data = _read_settings(vault, TEMPLATE_SETTINGS)
    return TemplateSettings(
        folder=_text(data, "folder", "").strip("/"),
        date_format=_text(data, "dateFormat", DEFAULT_DATE_FORMAT),
        time_format=_text(data, "timeFormat", DEFAULT_TIME_FORMAT),
    )


def parse_day(day: str | None, today: dt.date) -> dt.date:
    """An ISO date (`2026-11-26`), or today when None or empty."""
    if day is None or not day.strip():
        return today
    try:
        return dt.date.fromisoformat(day.strip())
    except ValueError:
        raise NoteEditError(f"{day!r} is not a date; use YYYY-MM-DD") from None


def daily_note_path(settings: DailySettings, day: dt.date) -> str:
    name = format_moment(dt.datetime.combine(day, dt.time()), settings.format)
    return posixpath.join(settings.folder, name) + ".md" if settings.folder else name + ".md"


def _with_md(path: str) -> str:
    return path if path.lower().endswith(".md") else path + ".md"


def _template_text(app: Notes, path: str) -> str:
    clean = app.vault.check_note_path(_with_md(path))
    try:
        data = app.vault.read_note(clean)
    except NoteNotFoundError:
        raise NoteEditError(f"the template {clean!r} does not exist") from None
    return decode_text(clean, data)[0]


def resolve_template(app: Notes, template: str) -> str:
    """A template named as in Obsidian's picker ("Meeting"), or by its vault path."""
    settings = read_template_settings(app.vault)
    name = _with_md(template.strip().removeprefix("/"))
    if settings.folder and not name.startswith(settings.folder + "/"):
        inside = f"{settings.folder}/{name}"
        if (app.vault.root / inside).is_file() or not (app.vault.root / name).is_file():
            return inside
    return name


def render_template_note(app: Notes, template: str, path: str, now: dt.datetime) -> str:
    """The text of a template note with its variables filled in for a note at `path`."""
    settings = read_template_settings(app.vault)
    text = _template_text(app, resolve_template(app, template))
    title = posixpath.basename(path).removesuffix(".md")
    return render_template(
        text,
        title=title,
        when=now,
        date_format=settings.date_format,
        time_format=settings.time_format,
    )


def get_daily_note(app: Notes, day: str | None, today: dt.date | None = None) -> DailyNote:
    """The daily note of a day (today by default): where it is, and its text if it exists."""
    date = parse_day(day, today or dt.date.today())
    path = app.vault.note_path(daily_note_path(read_daily_settings(app.vault), date))
    try:
        data = app.vault.read_note(path)
    except NoteNotFoundError:
        return DailyNote(path, date.isoformat(), False, None, None)
    return DailyNote(path, date.isoformat(), True, decode_text(path, data)[0], sha256(data))


def append_to_daily_note(
    app: Notes,
    text: str,
    day: str | None,
    sync: CacheSync,
    now: dt.datetime | None = None,
    check: Callable[[str], None] = lambda path: None,
) -> DailyAppend:
    """Append `text` to a day's daily note, making the note (from its template) if missing.
    `check` sees the note's path first, and may refuse it by raising (a caller's folders)."""
    now = now or dt.datetime.now().astimezone()
    date = parse_day(day, now.date())
    settings = read_daily_settings(app.vault)
    path = app.vault.note_path(daily_note_path(settings, date))
    check(path)
    created = False
    if not (app.vault.root / path).is_file():
        initial = _daily_template(app, settings, path, dt.datetime.combine(date, now.timetz()))
        try:
            create_note(app, path, initial, None, None, lambda _: True)
            created = True
        except VaultError as exc:
            if "already exists" not in str(exc):  # made meanwhile: append to it
                raise
    patched = patch_note(
        app, path, changed_once(lambda t: patch.append_text(t, text)), expected_hash=None, sync=sync
    )
    return DailyAppend(patched, created)


def _daily_template(app: Notes, settings: DailySettings, path: str, when: dt.datetime) -> str:
    if not settings.template:
        return ""
    templates = read_template_settings(app.vault)
    title = posixpath.basename(path).removesuffix(".md")
    return render_template(
        _template_text(app, settings.template),
        title=title,
        when=when,
        date_format=settings.format,
        time_format=templates.time_format,
    )
