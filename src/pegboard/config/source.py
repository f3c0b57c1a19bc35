"""Where a running runtime reads its config again: a protocol, and the config file.

``pegboard serve`` watches its config and applies changes while serving
(:meth:`~pegboard.runtime.ToolRuntime.watch_config`); a team gateway reads it from its shared
store instead. Either is a :class:`ConfigSource`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pegboard.config.load import LoadedConfig, load_config


class ConfigSource(Protocol):
    """A config that may change while a runtime runs."""

    def stamp(self) -> object:
        """A value that differs whenever the config may have changed (cheap to read)."""
        ...

    def load(self) -> LoadedConfig:
        """The current config, validated (raises ConfigError when it is not)."""
        ...


class FileConfigSource:
    """The TOML file a config was loaded from; its stamp is the file's modification time."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def stamp(self) -> object:
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def load(self) -> LoadedConfig:
        return load_config(self.path)
