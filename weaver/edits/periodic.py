"""Periodic notes (day, week, month, quarter, year), found and made as Obsidian would.

Where a period's notes live comes from the first of these that applies, as Obsidian's plugins
decide it (obsidian-daily-notes-interface):
1. The Periodic Notes community plugin, when `.obsidian/community-plugins.json` lists
   `periodic-notes` and its `.obsidian/plugins/periodic-notes/data.json` enables the period.
   Both of its formats are read: the released 0.x one (top-level `daily`, `weekly`, `monthly`,
   `quarterly`, `yearly`, each `{enabled, folder, format, template}`) and the 1.0 betas'
   calendar sets (`calendarSets: [{id, day: {enabled, folder, format, templatePath}, week,
   ...}]`, the set named by `activeCalendarSet`, else the first).
2. For `day`: the core Daily notes settings, `.obsidian/daily-notes.json` (as before Periodic
   Notes was read: a vault without the plugin keeps its daily notes exactly where they were).
3. For `week`: the Calendar community plugin's weekly note settings (`weeklyNoteFormat`,
   `weeklyNoteFolder`, `weeklyNoteTemplate`), when it is enabled and has them.
4. Otherwise the plugin's defaults: the vault root, `YYYY-MM-DD`, `gggg-[W]ww`, `YYYY-MM`,
   `YYYY-[Q]Q`, `YYYY`, no template.

A note is named by formatting the first day of its period (the locale week's first day for a
week), as the plugin does. Locale weeks (`gggg`, `ww`) follow moment's English locale (Sunday
first, week 1 holds January 1st) unless Periodic Notes (1.x) or Calendar sets `weekStart` to a
day; ISO tokens (`GGGG`, `WW`) are ISO weeks whatever the settings.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from dataclasses import dataclass
from typing import Any, Literal, get_args

from weaver.edits.notes import CacheSync, NoteEditError, create_note, sha256
from weaver.edits.patches import Patched, changed_once, decode_text, patch_note
from weaver.edits.steps import Notes
from weaver.edits.templates import (
    note_title,
    read_json_file,
    read_settings_json,
    read_template_settings,
    template_text,
    text_setting,
)
from weaver.errors import NoteNotFoundError, VaultError
from weaver.markdown import patch
from weaver.markdown.dates import (
    ENGLISH_WEEK,
    WEEK_DAYS,
    WeekRule,
    format_moment,
    render_template,
)
from weaver.vault.fs import Vault

Period = Literal["day", "week", "month", "quarter", "year"]
PERIODS: tuple[Period, ...] = get_args(Period)
SettingsSource = Literal["periodic-notes", "daily-notes", "calendar", "defaults"]

COMMUNITY_PLUGINS = ".obsidian/community-plugins.json"
DAILY_SETTINGS = ".obsidian/daily-notes.json"
PERIODIC_SETTINGS = ".obsidian/plugins/periodic-notes/data.json"
CALENDAR_SETTINGS = ".obsidian/plugins/calendar/data.json"

DEFAULT_FORMATS: dict[Period, str] = {
    "day": "YYYY-MM-DD",
    "week": "gggg-[W]ww",
    "month": "YYYY-MM",
    "quarter": "YYYY-[Q]Q",
    "year": "YYYY",
}
# The keys of the plugin's 0.x settings, one object per period.
_LEGACY_KEYS: dict[Period, str] = {
    "day": "daily",
    "week": "weekly",
    "month": "monthly",
    "quarter": "quarterly",
    "year": "yearly",
}


@dataclass(frozen=True, slots=True)
class PeriodSettings:
    period: Period
    folder: str
    format: str
    template: str  # a vault path, with or without .md; "" for none
    week: WeekRule
    source: SettingsSource


@dataclass(frozen=True, slots=True)
class PeriodicNote:
    path: str
    period: Period
    date: str  # ISO date of the period's first day
    exists: bool
    content: str | None
    content_hash: str | None
    source: SettingsSource


@dataclass(frozen=True, slots=True)
class PeriodicAppend:
    patched: Patched
    created: bool  # the note did not exist and was made (from its template, if any)


def parse_day(day: str | None, today: dt.date) -> dt.date:
    """An ISO date (`2026-11-26`), or today when None or empty."""
    if day is None or not day.strip():
        return today
    try:
        return dt.date.fromisoformat(day.strip())
    except ValueError:
        raise NoteEditError(f"{day!r} is not a date; use YYYY-MM-DD") from None


def enabled_plugins(vault: Vault) -> set[str]:
    """The community plugins Obsidian loads for this vault (a JSON array of plugin ids)."""
    data = read_json_file(vault, COMMUNITY_PLUGINS)
    return {item for item in data if isinstance(item, str)} if isinstance(data, list) else set()


def read_period_settings(vault: Vault, period: Period) -> PeriodSettings:
    plugins = enabled_plugins(vault)
    periodic = read_settings_json(vault, PERIODIC_SETTINGS) if "periodic-notes" in plugins else {}
    calendar = read_settings_json(vault, CALENDAR_SETTINGS) if "calendar" in plugins else {}
    week = _week_rule(periodic, PERIODIC_SETTINGS) or _week_rule(calendar, CALENDAR_SETTINGS)
    week = week or ENGLISH_WEEK
    config = _periodic_config(periodic, period)
    if config is not None:
        template = text_setting(config, "templatePath", text_setting(config, "template", ""))
        return _settings(period, config, "folder", "format", template, week, "periodic-notes")
    if period == "day":
        daily = read_settings_json(vault, DAILY_SETTINGS)
        template = text_setting(daily, "template", "")
        return _settings(period, daily, "folder", "format", template, week, "daily-notes")
    keys = ("weeklyNoteFolder", "weeklyNoteFormat", "weeklyNoteTemplate")
    if period == "week" and any(text_setting(calendar, key, "") for key in keys):
        template = text_setting(calendar, "weeklyNoteTemplate", "")
        return _settings(period, calendar, *keys[:2], template, week, "calendar")
    return PeriodSettings(period, "", DEFAULT_FORMATS[period], "", week, "defaults")


def _settings(
    period: Period,
    data: dict[str, Any],
    folder_key: str,
    format_key: str,
    template: str,
    week: WeekRule,
    source: SettingsSource,
) -> PeriodSettings:
    return PeriodSettings(
        period=period,
        folder=text_setting(data, folder_key, "").strip("/"),
        format=text_setting(data, format_key, DEFAULT_FORMATS[period]),
        template=template,
        week=week,
        source=source,
    )


def _periodic_config(data: dict[str, Any], period: Period) -> dict[str, Any] | None:
    """The Periodic Notes settings of a period when it is enabled there, else None."""
    sets = data.get("calendarSets")
    if isinstance(sets, list) and sets:
        chosen = [s for s in sets if isinstance(s, dict)]
        active = [s for s in chosen if s.get("id") == data.get("activeCalendarSet")]
        config = (active or chosen or [{}])[0].get(period)
    else:
        config = data.get(_LEGACY_KEYS[period])
    return config if isinstance(config, dict) and config.get("enabled") is True else None


def _week_rule(data: dict[str, Any], name: str) -> WeekRule | None:
    """The `weekStart` a plugin sets, None when absent or "locale" (the locale decides)."""
    start = data.get("weekStart")
    if start is None or start == "locale":
        return None
    if not isinstance(start, str) or start.casefold() not in WEEK_DAYS:
        raise NoteEditError(
            f"weekStart {start!r} in {name} is not a day; use one of {', '.join(WEEK_DAYS)} "
            "or 'locale'"
        )
    # moment's updateLocale changes only the first day: the English `doy` stays.
    return WeekRule(dow=WEEK_DAYS.index(start.casefold()), doy=ENGLISH_WEEK.doy)


def period_start(period: Period, day: dt.date, week: WeekRule) -> dt.date:
    """The first day of the period holding `day`."""
    match period:
        case "day":
            return day
        case "week":
            return week.week_start(day)
        case "month":
            return day.replace(day=1)
        case "quarter":
            return day.replace(month=(day.month - 1) // 3 * 3 + 1, day=1)
        case "year":
            return day.replace(month=1, day=1)


def periodic_note_path(settings: PeriodSettings, start: dt.date) -> str:
    name = format_moment(dt.datetime.combine(start, dt.time()), settings.format, settings.week)
    return posixpath.join(settings.folder, name) + ".md" if settings.folder else name + ".md"


def get_periodic_note(
    app: Notes, period: Period, day: str | None, today: dt.date | None = None
) -> PeriodicNote:
    """The note of the period holding a date (today by default): where it is, and its text if
    it exists."""
    settings = read_period_settings(app.vault, period)
    start = period_start(period, parse_day(day, today or dt.date.today()), settings.week)
    path = app.vault.note_path(periodic_note_path(settings, start))
    try:
        data = app.vault.read_note(path)
    except NoteNotFoundError:
        return PeriodicNote(path, period, start.isoformat(), False, None, None, settings.source)
    text = decode_text(path, data)[0]
    return PeriodicNote(path, period, start.isoformat(), True, text, sha256(data), settings.source)


def periodic_path(
    app: Notes, period: Period, day: str | None, now: dt.datetime | None = None
) -> str:
    """The path of the note of the period holding a date (today by default): where
    `append_to_periodic_note` writes, for a check of who may write there first."""
    now = now or dt.datetime.now().astimezone()
    settings = read_period_settings(app.vault, period)
    start = period_start(period, parse_day(day, now.date()), settings.week)
    return app.vault.note_path(periodic_note_path(settings, start))


def append_to_periodic_note(
    app: Notes,
    period: Period,
    text: str,
    day: str | None,
    sync: CacheSync,
    now: dt.datetime | None = None,
) -> PeriodicAppend:
    """Append `text` to the note of the period holding a date (today by default), making the
    note (from its template) if missing."""
    now = now or dt.datetime.now().astimezone()
    settings = read_period_settings(app.vault, period)
    start = period_start(period, parse_day(day, now.date()), settings.week)
    path = app.vault.note_path(periodic_note_path(settings, start))
    created = False
    if not (app.vault.root / path).is_file():
        initial = _from_template(app, settings, path, dt.datetime.combine(start, now.timetz()))
        try:
            create_note(app, path, initial, None, None, lambda _: True)
            created = True
        except VaultError as exc:
            if "already exists" not in str(exc):  # made meanwhile: append to it
                raise
    patched = patch_note(
        app, path, changed_once(lambda t: patch.append_text(t, text)), expected_hash=None, sync=sync
    )
    return PeriodicAppend(patched, created)


def _from_template(app: Notes, settings: PeriodSettings, path: str, when: dt.datetime) -> str:
    """The new note's first text: its template filled as the plugins fill it (`{{date}}` the
    period's first day in the note's own format, `{{time}}` now, weekdays in a weekly note)."""
    if not settings.template:
        return ""
    return render_template(
        template_text(app, settings.template),
        title=note_title(path),
        when=when,
        date_format=settings.format,
        time_format=read_template_settings(app.vault).time_format,
        week=settings.week,
        weekdays=settings.period == "week",
    )
