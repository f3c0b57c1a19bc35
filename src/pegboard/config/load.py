"""Where the config lives, how it is read and written.

Config file: ``--config PATH`` > ``$PEGBOARD_CONFIG`` > ``<user config dir>/config.toml``
(``~/.config/pegboard/config.toml`` on Linux, ``~/Library/Application Support/pegboard`` on
macOS, ``%LOCALAPPDATA%\\pegboard`` on Windows). A missing file is a valid, empty config.

Data directory: ``$PEGBOARD_DATA_DIR`` > ``data_dir`` in the file > the user data dir
(``~/.local/share/pegboard`` on Linux).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import ValidationError

from pegboard.config.model import PegboardConfig
from pegboard.core.wording import plural
from pegboard.errors import ConfigError

CONFIG_ENV = "PEGBOARD_CONFIG"
DATA_DIR_ENV = "PEGBOARD_DATA_DIR"
TOKEN_ENV = "PEGBOARD_TOKEN"
STORE_URL_ENV = "PEGBOARD_STORE_URL"
APP_NAME = "pegboard"


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


def resolve_config_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The config file to use: the argument, then ``$PEGBOARD_CONFIG``, then the default."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env).expanduser()
    return default_config_path()


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated config with the facts about where it came from."""

    config: PegboardConfig
    path: Path
    exists: bool
    raw: dict[str, Any]

    @property
    def data_dir(self) -> Path:
        env = os.environ.get(DATA_DIR_ENV)
        if env:
            return Path(env).expanduser()
        if self.config.data_dir:
            configured = Path(self.config.data_dir).expanduser()
            return configured if configured.is_absolute() else self.path.parent / configured
        return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))

    @property
    def catalog_path(self) -> Path:
        return self.data_dir / "catalog.sqlite3"

    @property
    def stderr_dir(self) -> Path:
        """Where each MCP server's stderr of its last start is kept (``servers logs``)."""
        return self.data_dir / "logs"

    @property
    def gateway_token(self) -> str | None:
        return os.environ.get(TOKEN_ENV) or self.config.gateway.token

    @property
    def store_url(self) -> str | None:
        """The team store's PostgreSQL URL: ``$PEGBOARD_STORE_URL``, else ``[store] url``
        (None: the SQLite file of the data directory)."""
        env = os.environ.get(STORE_URL_ENV)
        if env:
            if not env.startswith(("postgresql://", "postgres://")):
                raise ConfigError(
                    f"{STORE_URL_ENV} must be a postgresql:// URL (or unset it for SQLite)"
                )
            return env
        return self.config.store.url


def load_config(path: str | os.PathLike[str] | None = None) -> LoadedConfig:
    """Read and validate the config; a missing file yields the empty default config.

    Raises ConfigError naming the file, the key and what was expected.
    """
    resolved = resolve_config_path(path)
    if not resolved.exists():
        return LoadedConfig(PegboardConfig(), resolved, exists=False, raw={})
    try:
        raw = tomllib.loads(resolved.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{resolved}: not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{resolved}: nested too deeply to be a pegboard config") from exc
    except OSError as exc:
        raise ConfigError(f"{resolved}: cannot be read: {exc.strerror or exc}") from exc
    config = validate_config(raw, source=resolved, base_dir=resolved.parent)
    return LoadedConfig(config, resolved, exists=True, raw=raw)


def validate_config(
    raw: Mapping[str, Any], *, source: Path | str = "<config>", base_dir: Path | None = None
) -> PegboardConfig:
    """``raw`` as a PegboardConfig; relative server commands resolve against ``base_dir``
    (the config file's folder; None: the folder of ``source`` when it is a path)."""
    if base_dir is None and isinstance(source, Path):
        base_dir = source.parent
    try:
        return PegboardConfig.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source)) from exc
    except RecursionError as exc:
        raise ConfigError(f"{source}: nested too deeply to be a pegboard config") from exc


_NO_ECHO = frozenset({"missing", "value_error", "assertion_error"})
# Keys whose values may be credentials: a message never shows what was given there.
_SECRET_PARTS = frozenset({"env", "headers", "token", "api_key", "args", "url", "command", "cwd"})


def format_validation_error(exc: ValidationError, source: Path | str) -> str:
    lines = [f"{source}: invalid configuration ({plural(exc.error_count(), 'problem')}):"]
    for err in exc.errors(include_url=False):
        key = ".".join(str(part) for part in err["loc"]) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; see the configuration reference)"
        elif "input" in err and err["type"] not in _NO_ECHO and err["loc"]:
            message = f"{message}; got {_shown(err['loc'], err['input'])}"
        lines.append(f"  {key}: {message}")
    return "\n".join(lines)


def _shown(loc: tuple[int | str, ...], value: Any) -> str:
    """The given value if it is a short scalar outside secret-bearing keys, else its type."""
    secret = any(str(part) in _SECRET_PARTS for part in loc)
    if not secret and isinstance(value, str | int | float | bool) and len(repr(value)) <= 40:
        return repr(value)
    return f"a {type(value).__name__}" + (" (value hidden)" if secret else "")


def write_config(path: Path, raw: Mapping[str, Any]) -> None:
    """Validate ``raw`` and write it atomically (the previous file is kept as ``.bak``).

    The file is edited, not regenerated: comments, key order and layout of everything
    ``raw`` leaves unchanged survive (see :func:`render_config`).
    """
    validate_config(raw, source=path)
    text = render_config(path, raw)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        if path.exists():
            backup = path.with_name(path.name + ".bak")
            backup.write_bytes(path.read_bytes())
        tmp.replace(path)
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot be written ({exc.strerror or exc}); check that {path.parent} is a "
            "writable directory, or point --config elsewhere"
        ) from exc


def render_config(path: Path, raw: Mapping[str, Any]) -> str:
    """The text of ``path`` with its values changed to ``raw``'s, comments and layout kept.

    Keys ``raw`` lacks are removed, changed values rewritten in place, new keys appended;
    new tables get their nested tables inline (``env = { ... }``) as a person writes them.
    """
    import tomlkit  # lazy: only commands that write the config need it

    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else None
    except (OSError, tomlkit.exceptions.ParseError) as exc:
        raise ConfigError(f"{path}: cannot be edited: {exc}") from exc
    if doc is None:
        doc = tomlkit.document()
    _merge_into(doc, raw, depth=0)
    return tomlkit.dumps(doc)


def _merge_into(container: Any, new: Mapping[str, Any], *, depth: int) -> None:
    for key in [k for k in container if k not in new]:
        _drop_leading_comments(container, key)
        del container[key]
    for key, value in new.items():
        current = container.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            _merge_into(current, value, depth=depth + 1)
        elif current is None:
            _add(container, key, _new_item(value, depth, inline=_is_inline(container)))
        elif _plain(current) != value:
            container[key] = _new_item(value, depth, inline=_is_inline(container))


def _drop_leading_comments(container: Any, key: str) -> None:
    """Remove the comment lines right above table ``key`` with it (tomlkit keeps them at the
    end of the table before it: ``# GitHub needs a token`` above ``[servers.github]``)."""
    from tomlkit.items import Comment, Table

    body = getattr(getattr(container, "value", container), "body", None)
    if not isinstance(body, list):
        return
    keys = [k.key if k is not None else None for k, _ in body]
    if key not in keys or not isinstance(body[keys.index(key)][1], Table):
        return
    before = [item for k, item in body[: keys.index(key)] if k is not None]
    if not before or not isinstance(before[-1], Table):
        return
    previous = before[-1].value.body
    while previous and previous[-1][0] is None and isinstance(previous[-1][1], Comment):
        previous.pop()


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


def _is_inline(container: Any) -> bool:
    from tomlkit.items import InlineTable

    return isinstance(container, InlineTable)


def _add(container: Any, key: str, item: Any) -> None:
    """Add ``key`` after the table's last plain key, not after comments that lead the next
    table (``# GitHub needs a token`` above ``[servers.github]`` stays above it)."""
    from tomlkit.items import AoT, Comment, Table, Whitespace

    body = getattr(container, "value", container)  # a Table's Container, or the Document
    items = getattr(body, "body", [])
    plain = [
        index
        for index, (k, v) in enumerate(items)
        if k is not None and not isinstance(v, (Table, AoT, Comment, Whitespace))
    ]
    after = plain[-1] + 1 if plain else len(items)
    if after < len(items) and not isinstance(item, Table) and hasattr(body, "_insert_at"):
        # tomlkit has no public insert-at (0.15 dropped the ``_insert_after`` it had)
        body._insert_at(after, key, item)
    else:
        container[key] = item


def _new_item(value: Any, depth: int, *, inline: bool = False) -> Any:
    """A TOML item for a new value: ``[servers.<id>]`` tables, anything deeper inline."""
    import tomlkit

    if not isinstance(value, Mapping):
        return value
    if inline or depth >= 2:
        table: Any = tomlkit.inline_table()
    else:
        nested = depth == 0 and bool(value) and all(isinstance(v, Mapping) for v in value.values())
        table = tomlkit.table(is_super_table=nested)  # [servers.a] without an empty [servers]
    for k, v in value.items():
        table[k] = _new_item(v, depth + 1, inline=inline)
    return table
