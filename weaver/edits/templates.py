"""Templates and the vault's own Obsidian settings files, shared by the daily and periodic
notes and by create_file.

`.obsidian/templates.json` (core Templates plugin): `folder`, `dateFormat`, `timeFormat`
(defaults `YYYY-MM-DD`, `HH:mm`). `read_settings_json` reads any `.obsidian` settings file: an
absent file is `{}` (Obsidian's defaults), a broken one an error naming the file.
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
from dataclasses import dataclass
from typing import Any

from weaver.edits.notes import NoteEditError
from weaver.edits.patches import decode_text
from weaver.edits.steps import Notes
from weaver.errors import NoteNotFoundError
from weaver.markdown.dates import DEFAULT_DATE_FORMAT, DEFAULT_TIME_FORMAT, render_template
from weaver.vault.fs import Vault

TEMPLATE_SETTINGS = ".obsidian/templates.json"


@dataclass(frozen=True, slots=True)
class TemplateSettings:
    folder: str = ""
    date_format: str = DEFAULT_DATE_FORMAT
    time_format: str = DEFAULT_TIME_FORMAT


def read_json_file(vault: Vault, name: str) -> object:
    """The JSON value of a vault file, None when there is no such file."""
    try:
        raw = (vault.root / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise NoteEditError(f"cannot read {name}: {exc}") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NoteEditError(f"{name} is not valid JSON (line {exc.lineno}: {exc.msg})") from None


def read_settings_json(vault: Vault, name: str) -> dict[str, Any]:
    """The JSON object of a settings file, `{}` when there is none."""
    data = read_json_file(vault, name)
    return data if isinstance(data, dict) else {}


def text_setting(data: dict[str, Any], key: str, default: str) -> str:
    """A string setting, stripped; `default` when absent, blank or not a string (Obsidian
    treats an emptied field as unset)."""
    value = data.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else default


def read_template_settings(vault: Vault) -> TemplateSettings:
    data = read_settings_json(vault, TEMPLATE_SETTINGS)
    return TemplateSettings(
        folder=text_setting(data, "folder", "").strip("/"),
        date_format=text_setting(data, "dateFormat", DEFAULT_DATE_FORMAT),
        time_format=text_setting(data, "timeFormat", DEFAULT_TIME_FORMAT),
    )


def with_md(path: str) -> str:
    return path if path.lower().endswith(".md") else path + ".md"


def template_text(app: Notes, path: str) -> str:
    """The text of the template note at a vault path (with or without `.md`)."""
    clean = app.vault.check_note_path(with_md(path.strip().removeprefix("/")))
    try:
        data = app.vault.read_note(clean)
    except NoteNotFoundError:
        raise NoteEditError(f"the template {clean!r} does not exist") from None
    return decode_text(clean, data)[0]


def resolve_template(app: Notes, template: str) -> str:
    """A template named as in Obsidian's picker ("Meeting"), or by its vault path."""
    settings = read_template_settings(app.vault)
    name = with_md(template.strip().removeprefix("/"))
    if settings.folder and not name.startswith(settings.folder + "/"):
        inside = f"{settings.folder}/{name}"
        if (app.vault.root / inside).is_file() or not (app.vault.root / name).is_file():
            return inside
    return name


def render_template_note(app: Notes, template: str, path: str, now: dt.datetime) -> str:
    """The text of a template note with its variables filled in for a note at `path`."""
    settings = read_template_settings(app.vault)
    text = template_text(app, resolve_template(app, template))
    return render_template(
        text,
        title=note_title(path),
        when=now,
        date_format=settings.date_format,
        time_format=settings.time_format,
    )


def note_title(path: str) -> str:
    return posixpath.basename(path).removesuffix(".md")
