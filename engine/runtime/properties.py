"""A process's Pinot config: the Java properties file Pinot's processes take
(``-configFileName``), keys as Pinot names them (``pinot.broker.query.log.maxRatePerSecond``).

Read with jproperties; typed getters name the key and the file when a value is malformed, so a
bad config stops the process at start-up with a message a person can act on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from jproperties import Properties

from engine.common.errors import ConfigError

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class PinotProperties:
    def __init__(self, values: Mapping[str, str] | None = None, source: str = "config") -> None:
        self.values = {str(k).strip(): str(v).strip() for k, v in (values or {}).items()}
        self.source = source

    @classmethod
    def load(cls, path: str | os.PathLike | None) -> PinotProperties:
        """The properties of ``path`` (none when ``path`` is None or empty)."""
        if not path:
            return cls()
        props = Properties()
        try:
            with open(path, "rb") as fh:
                props.load(fh, "utf-8")
        except OSError as exc:
            raise ConfigError(str(path), f"cannot read the config file: {exc}") from exc
        return cls({k: v.data for k, v in props.items()}, str(Path(path)))

    def get(self, key: str, default: str | None = None) -> str | None:
        value = self.values.get(key)
        return default if value is None or value == "" else value

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise ConfigError(key, f"must be true or false, got {value!r} (in {self.source})")

    def get_float(self, key: str, default: float) -> float:
        value = self.get(key)
        if value is None:
            return default
        try:
            return float(value)
        except ValueError:
            raise ConfigError(key, f"must be a number, got {value!r} (in {self.source})") from None

    def get_int(self, key: str, default: int) -> int:
        value = self.get_float(key, default)
        if value != int(value):
            raise ConfigError(key, f"must be a whole number, got {value!r} (in {self.source})")
        return int(value)
