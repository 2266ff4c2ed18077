"""Settings: built once in an entry point and passed down.

Precedence, lowest first: the defaults below, the TOML file (`--config`, else `WEAVER_CONFIG`,
else `config/weaver.toml` under the working directory when present), `WEAVER_<NAME>` environment
variables, then CLI flags. Relative paths in the file are relative to the file's own folder, so
the shipped `config/weaver.toml` finds the demo vault wherever the command runs from.
"""

from __future__ import annotations

import functools
import importlib.util
import ipaddress
import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import ErrorDetails

from weaver.errors import ConfigError, did_you_mean, suggest
from weaver.installation import extra_command
from weaver.obsidian_app import list_known_vaults
from weaver.path_globs import PathGlobs

# Re-exported: the settings are where the rest of Weaver reads the toolsets from.
from weaver.toolsets import ALL_TOOLSETS as ALL_TOOLSETS
from weaver.toolsets import DEFAULT_TOOLSETS as DEFAULT_TOOLSETS
from weaver.toolsets import TOOLSETS as TOOLSETS
from weaver.toolsets import Toolset as Toolset

DEFAULT_CONFIG = Path("config") / "weaver.toml"
DATABASE_URL_FORMS = "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
POSTGRES_MODULES = ("psycopg", "procrastinate")


def database_url_problem(url: str) -> str | None:
    """Why the cache cannot live at `url`, or None: checked before anything is opened (no
    connection, no file), so that a bad URL is a configuration error, not a failure midway."""
    # Imported here: the command line reads the toolsets' names from this module to build its
    # parser, and SQLAlchemy is needed only once a database URL is given.
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return f"not a database URL; expected {DATABASE_URL_FORMS}"
    if parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        return None
    if parsed.drivername != "postgresql+psycopg":
        return f"not a database Weaver can use; expected {DATABASE_URL_FORMS}"
    missing = [name for name in POSTGRES_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        hint = extra_command("postgres")
        return f"PostgreSQL support is not installed (no {missing[0]} module): {hint}"
    return None


CACHE_DIR_NAME = ".weaver"
# A host name as RFC 1123 allows it: dot-separated labels of letters, digits and inner hyphens.
HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")
SHOWN_VALUE_CHARS = 100  # a bad value is quoted in the error up to this length


AccessScope = Literal["read", "write", "workflows", "admin"]
ACCESS_SCOPES: tuple[AccessScope, ...] = get_args(AccessScope)
SCOPE_PREFIX = "weaver:"
HTTP_TOKEN_RULE = "http_token"  # the rule `client` naming the bearer token's holders
ANY_CLIENT = "*"


@functools.lru_cache(maxsize=64)
def _compiled_globs(globs: tuple[str, ...]) -> PathGlobs:
    """A rule's globs, built once: a confined client's every call asks for them. Keyed by
    the globs, not kept on the rule, which `model_copy` would carry over stale."""
    return PathGlobs.of(globs)


class AccessRule(BaseModel):
    """What one remote client may do (`[[access]]` in the settings): the folders it may read
    and write, and at most which scopes. The first rule naming a caller applies to it; a
    caller no rule names may do everything its token allows; the local user (stdio) is never
    limited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    client: str = Field(min_length=1)
    read: list[str] = Field(default_factory=lambda: ["**"])
    # Unset: the same folders as `read` (a client writes where it reads, unless told less).
    write: list[str] | None = None
    scopes: list[str] | None = None

    @field_validator("read", "write")
    @classmethod
    def _valid_globs(cls, globs: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if globs is not None:
            try:
                PathGlobs.of(globs)
            except ValueError as exc:
                client = info.data.get("client")
                raise ValueError(f"{exc}, in the rule for client {client!r}") from None
        return globs

    @field_validator("scopes")
    @classmethod
    def _known_scopes(cls, scopes: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if scopes is None:
            return None
        names = [scope.removeprefix(SCOPE_PREFIX) for scope in scopes]
        unknown = [name for name in names if name not in ACCESS_SCOPES]
        if unknown:
            raise ValueError(
                f"unknown scope {unknown[0]!r} in the rule for client {info.data.get('client')!r};"
                f" expected some of {', '.join(ACCESS_SCOPES)}"
            )
        return [SCOPE_PREFIX + name for name in ACCESS_SCOPES if name in names]

    @property
    def read_globs(self) -> PathGlobs:
        return _compiled_globs(tuple(self.read))

    @property
    def write_globs(self) -> PathGlobs:
        return _compiled_globs(tuple(self.read if self.write is None else self.write))

    def names(self, kind: str, client_id: str, name: str) -> bool:
        """Whether this rule applies to a remote caller of this kind, id and name."""
        if self.client == ANY_CLIENT:
            return True
        if kind == "token":
            return self.client == HTTP_TOKEN_RULE
        return self.client in (client_id, name)


# A vault's name in `[vaults.NAME]`: it stands in resource URIs and the dashboard's address.
VAULT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
VAULT_ENTRY_PATHS = ("path",)


def _usable_database_url(url: str | None) -> str | None:
    problem = database_url_problem(url) if url else None
    if problem is not None:
        raise ValueError(problem)
    return url


# A cache's URL, checked alike for the single vault and each of several.
DatabaseUrl = Annotated[str | None, AfterValidator(_usable_database_url)]


class VaultEntry(BaseModel):
    """One named vault of a server serving several (`[vaults.NAME]`): its folder, and the
    cache it keeps (by default, as for a single vault, a SQLite file in its `.weaver/`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    database_url: DatabaseUrl = None

    @field_validator("path")
    @classmethod
    def _absolute_path(cls, path: Path) -> Path:
        return path.expanduser().resolve()


class Settings(BaseModel):
    """Everything Weaver can be told. Each field is documented in `config/weaver.toml`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vault: Path
    database_url: DatabaseUrl = None
    ignore: list[str] = Field(default_factory=list)
    debounce_ms: int = Field(default=50, ge=1, le=10_000)
    index_workers: int | None = Field(default=None, ge=0, le=64)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["auto", "console", "json"] = "auto"
    read_only: bool = False
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=0, le=65535)
    http_token: str | None = None
    http_processes: int = Field(default=1, ge=1, le=32)
    http_session_idle_s: float = Field(default=1800.0, gt=0, le=30 * 86_400)
    oauth: bool = False
    public_url: str | None = None
    oauth_access_token_s: int = Field(default=3600, ge=60, le=86_400)
    oauth_refresh_token_s: int = Field(default=30 * 86_400, ge=3600, le=365 * 86_400)
    access: list[AccessRule] = Field(default_factory=list)
    # Expensive calls each client may make per minute (0: unlimited), by class of call
    # (`runtime.rate_limits`); `rate_limit_local` applies them to stdio and in-memory callers.
    rate_limit_search: int = Field(default=60, ge=0, le=100_000)
    rate_limit_graph: int = Field(default=60, ge=0, le=100_000)
    rate_limit_bulk: int = Field(default=10, ge=0, le=100_000)
    rate_limit_local: bool = False
    audit_retention_days: int = Field(default=90, ge=0)
    workflow_dirs: list[Path] = Field(default_factory=list)
    history_retention_days: int = Field(default=30, ge=0)
    history_retention_count: int = Field(default=10_000, ge=0)
    workflows: dict[str, dict[str, Any]] = Field(default_factory=dict)
    workflow_workers: int = Field(default=4, ge=1, le=64)
    workflow_poll_ms: int = Field(default=1000, ge=10, le=60_000)
    schedule_misfire_grace_s: int = Field(default=7 * 86_400, ge=1)
    worker_heartbeat_s: float = Field(default=5.0, gt=0, le=600)
    worker_stalled_s: float = Field(default=30.0, gt=0, le=3600)
    semantic: bool = True
    embedding_model: str = "all-MiniLM-L6-v2-static"
    embedding_model_path: Path | None = None
    embedding_threads: int = Field(default=1, ge=1, le=64)
    embedding_cache_dir: Path | None = None
    tool_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    confirm_destructive: Literal["allow", "refuse"] = "allow"
    confirm_move_notes: int = Field(default=10, ge=0, le=1_000_000)
    toolsets: list[Toolset] = Field(default_factory=lambda: list(DEFAULT_TOOLSETS))
    # Several named vaults served at once (`[vaults.NAME]`); `vault` and `database_url` are
    # then the default vault's (`load_settings` fills them in), the one a call names no vault.
    vaults: dict[str, VaultEntry] = Field(default_factory=dict)
    default_vault: str | None = None

    @field_validator("vaults")
    @classmethod
    def _vault_names(cls, vaults: dict[str, VaultEntry]) -> dict[str, VaultEntry]:
        for name in vaults:
            if not VAULT_NAME.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not a vault name; expected letters, digits, - and _ "
                    "(at most 64, starting with a letter or digit)"
                )
        folders: dict[Path, str] = {}
        for name, entry in vaults.items():
            if entry.path in folders:
                raise ValueError(f"{folders[entry.path]!r} and {name!r} are the same folder")
            folders[entry.path] = name
        return vaults

    @property
    def several_vaults(self) -> bool:
        """Whether this server serves more than one vault (tools then take `vault`)."""
        return len(self.vaults) > 1

    @property
    def vault_name(self) -> str:
        """The default vault's name (`default` for a single vault given as `vault`)."""
        return self.default_vault or next(iter(self.vaults), "default")

    def for_vault(self, name: str) -> Settings:
        """The settings of one named vault: these, with its folder and cache, alone."""
        entry = self.vaults[name]
        return self.model_copy(
            update={
                "vault": entry.path,
                "database_url": entry.database_url,
                "vaults": {},
                "default_vault": None,
            }
        )

    @field_validator("vault")
    @classmethod
    def _absolute_vault(cls, vault: Path) -> Path:
        return vault.expanduser().resolve()

    @field_validator("embedding_model_path", "embedding_cache_dir")
    @classmethod
    def _absolute_path(cls, path: Path | None) -> Path | None:
        return path.expanduser().resolve() if path is not None else None

    @field_validator("toolsets", mode="before")
    @classmethod
    def _known_toolsets(cls, value: object) -> object:
        return parse_toolsets(value)

    @field_validator("http_processes")
    @classmethod
    def _processes_share_a_socket(cls, count: int) -> int:
        # Reader processes inherit the listening socket by its descriptor (`pass_fds`), which
        # Windows does not have.
        if count > 1 and sys.platform == "win32":
            raise ValueError("several HTTP processes share one socket, which needs POSIX: use 1")
        return count

    @field_validator("http_host")
    @classmethod
    def _host_or_address(cls, host: str) -> str:
        try:
            ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
        except ValueError:
            if len(host) > 253 or not HOST_NAME.fullmatch(host):
                raise ValueError("expected an IP address or a host name") from None
        return host

    @field_validator("public_url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        """An origin and optional path prefix, as clients reach this server (behind TLS, the
        proxy's https address): the issuer and the tokens' audience are built from it."""
        if url is None:
            return None
        parsed = urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("expected an http:// or https:// URL, e.g. https://vault.example.com")
        if parsed.path not in ("", "/") or parsed.query or parsed.fragment:
            # The SDK serves the OAuth endpoints and their metadata at the root.
            raise ValueError("expected an origin alone (no path, query or fragment)")
        return url.rstrip("/")

    @property
    def db_url(self) -> str:
        """The cache database URL; by default a SQLite file inside the vault's `.weaver/`."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.vault / CACHE_DIR_NAME / 'cache.db'}"


def parse_toolsets(value: object) -> object:
    """Toolset names (a list, or one string separated by commas) as the setting holds them: in
    the order of `TOOLSETS`, each once, `all` for every one. Anything but names is left to the
    field's own validation."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
        return value
    names = {name.strip().lower() for name in value if name.strip()}
    valid = f"{', '.join(TOOLSETS)}, or {ALL_TOOLSETS}"
    unknown = sorted(names - {*TOOLSETS, ALL_TOOLSETS})
    if unknown:
        raise ValueError(f"unknown toolset {unknown[0]!r}; expected some of {valid}")
    if not names:
        raise ValueError(f"no toolset; expected some of {valid}")
    return [name for name in TOOLSETS if name in names or ALL_TOOLSETS in names]


def load_settings(
    config_path: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    vault_here: bool = True,
    checks: Sequence[SettingsCheck] = (),
) -> Settings:
    """Merge file, environment and overrides into validated `Settings`, or raise `ConfigError`.
    `vault_here` false (a reader, `serve --no-vault`, given `database_url`): the vault's folder
    need not exist on this host. `checks` are the layers' own checks of what they are given
    (`runtime.settings_checks`): each may refuse a setting as a `Problem`."""
    env = os.environ if environ is None else environ
    path = find_config_file(config_path, env)
    values: dict[str, Any] = _read_config_file(path) if path else {}
    sources = dict.fromkeys(values, f"in {path}")  # where each value came from, for errors
    from_env = _env_values(env)
    values.update(from_env)
    sources.update({key: f"in WEAVER_{key.upper()}" for key in from_env})
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    values.update(flags)
    sources.update(dict.fromkeys(flags, "on the command line"))
    values = _default_vault_values(values, sources)
    if "vault" not in values:
        raise ConfigError(no_vault_message(env))
    settings = _validate(values, sources)
    problem = (
        _worker_timing_problem(settings, sources)
        or _folder_problem(settings, vault_here)
        or next(filter(None, (check(settings) for check in checks)), None)
    )
    if problem is not None:
        raise refusal(problem, sources.get(problem[0].split(".")[0], "in settings"))
    return settings


def refusal(problem: Problem, source: str) -> ConfigError:
    """The error refusing a setting: `problem`, which came from `source` ("in FILE")."""
    name, value, why = problem
    value_shown = shown(name, value)
    said = f"{value_shown} {why}" if why.startswith("is ") else f"{value_shown}: {why}"
    return ConfigError(f"invalid setting {name!r} {source}: {said}")


# A refused setting: its name, its bad value, what is wrong or expected ("is ..." goes on the
# value's sentence: "'x.md' is a file, not a folder"). The checks below look
# at this host's files and create nothing, so nothing is made on disk for refused settings
# (no cache folder, no parent folder of a SQLite file).
Problem = tuple[str, object, str]
SettingsCheck = Callable[["Settings"], Problem | None]


def shown(name: str, value: object) -> str:
    """A bad value as the error quotes it: clipped, and with no secret in it."""
    if name == "http_token":
        return "(hidden)"
    if name == "database_url" and isinstance(value, str):
        # Whole, like a path: a SQLite URL clipped would not say which folder is missing.
        return repr(_without_password(value))
    if isinstance(value, Path):  # whole: a path clipped would not say which
        return repr(str(value))
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 3] + "..."


def shown_url(url: str) -> str:
    """A database URL as printed: whole, with no password in it."""
    return _without_password(url)


def _without_password(url: str) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _default_vault_values(values: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    """With `[vaults.NAME]` tables, `vault` and `database_url` as the default vault's; a
    `vault` given on the command line or in WEAVER_VAULT serves that one vault alone."""
    vaults = values.get("vaults")
    if not vaults or not isinstance(vaults, dict):
        if values.get("default_vault") is not None:
            source = sources.get("default_vault", "in settings")
            raise ConfigError(
                f"invalid setting 'default_vault' {source}: names a vault of [vaults.NAME] "
                "tables, and there are none"
            )
        return values
    if "vault" in values:
        if sources.get("vault") != sources.get("vaults"):  # a flag or WEAVER_VAULT: one vault
            return {k: v for k, v in values.items() if k not in ("vaults", "default_vault")}
        raise ConfigError(
            f"invalid setting 'vault' {sources['vault']}: set either `vault` (one vault) or "
            "[vaults.NAME] tables (several), not both"
        )
    if "database_url" in values:
        raise ConfigError(
            f"invalid setting 'database_url' {sources['database_url']}: with [vaults.NAME] "
            "tables, give each vault its own database_url in its table"
        )
    default = values.get("default_vault") or next(iter(vaults))
    if default not in vaults:
        close = suggest(str(default), list(vaults))
        hint = f"{did_you_mean(close)}; " if close else ""
        raise ConfigError(
            f"invalid setting 'default_vault' {sources.get('default_vault', 'in settings')}: "
            f"{shown('default_vault', default)} is not a vault ({hint}the vaults: "
            f"{', '.join(vaults)})"
        )
    entry = vaults[default]
    filled = {**values, "default_vault": default}
    if isinstance(entry, dict):
        filled["vault"] = entry.get("path")
        if entry.get("database_url"):
            filled["database_url"] = entry["database_url"]
    sources.setdefault("vault", sources.get("vaults", "in settings"))
    return filled


def _worker_timing_problem(settings: Settings, sources: Mapping[str, str]) -> Problem | None:
    """A heartbeat slower than the stall time would have live workers taken for dead."""
    beat, stalled = settings.worker_heartbeat_s, settings.worker_stalled_s
    if beat < stalled:
        return None
    if "worker_stalled_s" in sources and "worker_heartbeat_s" not in sources:
        return "worker_stalled_s", stalled, f"expected more than worker_heartbeat_s ({beat:g})"
    return "worker_heartbeat_s", beat, f"expected less than worker_stalled_s ({stalled:g})"


def _folder_problem(settings: Settings, vault_here: bool) -> Problem | None:
    if (vault_here or not settings.database_url) and not settings.vault.is_dir():
        return "vault", settings.vault, _not_a_folder(settings.vault, "the folder of notes")
    for name, entry in settings.vaults.items():
        if (vault_here or not entry.database_url) and not entry.path.is_dir():
            return f"vaults.{name}.path", entry.path, _not_a_folder(entry.path, "a vault's folder")
    for folder in settings.workflow_dirs:
        if not folder.is_dir():
            return "workflow_dirs", folder, _not_a_folder(folder, "a folder of workflow plugins")
    return None


def _not_a_folder(path: Path, expected: str) -> str:
    return (
        f"is a file, not a folder; expected {expected}"
        if path.exists()
        else (f"not found; expected {expected}")
    )


def no_vault_message(env: Mapping[str, str], platform: str | None = None) -> str:
    """Why no vault, the vaults Obsidian knows (where it has an `obsidian.json`), and the three
    ways to name one."""
    known = list_known_vaults(env, platform)
    lines = ["no vault configured."]
    if known:
        lines.append("The Obsidian app knows these vaults:")
        lines += [f"  {v.path}{'  (open in Obsidian)' if v.open else ''}" for v in known]
    example = str(known[0].path) if known else "PATH"
    lines += [
        "Name the vault in one of these ways:",
        f"  weaver --vault {shlex.quote(example)} index    (one command)",
        f"  export WEAVER_VAULT={shlex.quote(example)}    (this shell)",
        f"  vault = '{example}'    (a config file: --config FILE or WEAVER_CONFIG)",
    ]
    return "\n".join(lines)


def find_config_file(explicit: Path | None, env: Mapping[str, str]) -> Path | None:
    if explicit is not None:
        return explicit
    if env.get("WEAVER_CONFIG"):
        return Path(env["WEAVER_CONFIG"])
    return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} in {path}")
    base = path.resolve().parent
    for key in ("vault", "workflow_dirs", "embedding_model_path", "embedding_cache_dir"):
        if key in data:
            data[key] = _relative_to(base, data[key])
    for entry in data.get("vaults", {}).values() if isinstance(data.get("vaults"), dict) else ():
        if isinstance(entry, dict) and "path" in entry:
            entry["path"] = _relative_to(base, entry["path"])
    return data


def _relative_to(base: Path, value: Any) -> Any:
    """Resolve paths written in the config file against the file's folder."""
    if isinstance(value, str):
        return base / Path(value).expanduser()
    if isinstance(value, list):
        return [_relative_to(base, item) for item in value]
    return value


def _env_values(env: Mapping[str, str]) -> dict[str, Any]:
    """`WEAVER_<FIELD>` for every scalar or list field; lists are JSON or comma-separated."""
    values: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        raw = env.get(f"WEAVER_{name.upper()}")
        if raw is None or name in ("workflows", "vaults"):
            continue
        is_list = "list" in str(field.annotation)
        values[name] = _parse_list(name, raw) if is_list else raw
    return values


def _parse_list(name: str, raw: str) -> list[str]:
    if raw.lstrip().startswith("["):
        try:
            parsed = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            parsed = None
        if not isinstance(parsed, list):
            raise ConfigError(
                f"invalid setting {name!r} in WEAVER_{name.upper()}: {shown(name, raw)}: "
                "expected a JSON list of strings, or values separated by commas"
            )
        return [str(item) for item in parsed]
    return [part.strip() for part in raw.split(",") if part.strip()]


def _validate(values: dict[str, Any], sources: Mapping[str, str]) -> Settings:
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        source = sources.get(str(first["loc"][0]) if first["loc"] else "", "in settings")
        if first["type"] == "extra_forbidden":
            raise ConfigError(f"unknown setting {where!r} {source}") from exc
        value = shown(where, first["input"])
        raise ConfigError(
            f"invalid setting {where!r} {source}: {value}: {expected(first)}"
        ) from exc


def expected(error: ErrorDetails) -> str:
    """Pydantic's message for one error, without its `Value error, ` for our own checks."""
    if error["type"] == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    return error["msg"]
