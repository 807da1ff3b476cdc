"""A process's Pinot config: Pinot's keys (``controller.*``, ``pinot.broker.*``,
``pinot.server.*``, ``task.*`` ...) for the settings Sprig takes under Pinot's own names:
access control, service credentials, TLS listeners, the broker's query log and cancellation.

A Pinot user's ``pinot-controller.conf`` or ``pinot-broker.conf`` (the Java properties file
Pinot's processes take with ``-configFileName``) works unchanged: list the files in
``SPRIG_PINOT_CONFIG`` (comma-separated, Pinot's ``config.paths``), or give a broker its own
with ``sprig broker --config``; each process takes the keys of its own component. Keys can
also be set one by one as environment variables named exactly as the key
(``pinot.broker.access.control.principals=admin``, as docker-compose's ``environment:``
allows), which win over the files. As in Pinot, ``dynamic.env.config=k1,k2`` makes each listed
key's value the name of an environment variable to read it from, so a password need not be
written in a file.

Files are read with jproperties; typed getters name the key and where it came from when a
value is malformed, so a bad config stops the process at start-up with a message a person can
act on.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from jproperties import Properties, PropertyError

from engine.common.errors import ConfigError

CONFIG_FILES_ENV = "SPRIG_PINOT_CONFIG"
DYNAMIC_ENV_CONFIG_KEY = "dynamic.env.config"

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class PinotProperties(Mapping[str, str]):
    """Pinot keys and their string values (trimmed); ``source`` says where they came from,
    for error messages."""

    def __init__(self, values: Mapping[str, str] | None = None, source: str = "config") -> None:
        self._values = {str(k).strip(): str(v).strip() for k, v in (values or {}).items()}
        self.source = source

    @classmethod
    def load(cls, path: str | os.PathLike | None) -> PinotProperties:
        """The properties of the file ``path`` (none when ``path`` is None or empty)."""
        if not path:
            return cls()
        return cls(_read_file(path, str(path)), str(Path(path)))

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key``; ``default`` when it is absent or empty."""
        value = self._values.get(key)
        return default if value is None or value == "" else value

    def get_bool(self, key: str, default: bool = False) -> bool:
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

    def list(self, key: str) -> list[str]:
        """A comma-separated value as its trimmed, non-empty items (absent: [])."""
        return [item.strip() for item in self.get(key, "").split(",") if item.strip()]

    def subset(self, prefix: str) -> PinotProperties:
        """The keys under ``prefix.`` with the prefix removed."""
        head = prefix.rstrip(".") + "."
        return PinotProperties(
            {k[len(head) :]: v for k, v in self.items() if k.startswith(head)}, self.source
        )


def load_properties(
    environ: Mapping[str, str] | None = None, files: Iterable[str | os.PathLike | None] = ()
) -> PinotProperties:
    """The files of ``SPRIG_PINOT_CONFIG``, then ``files`` (a process's own config, such as
    ``sprig broker --config``), then dotted environment variables, then ``dynamic.env.config``
    applied; a later source wins. A missing or unreadable file is a ``ConfigError`` naming it
    (a process must not start with half its access rules)."""
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    read: list[str] = []
    for path in (p.strip() for p in environ.get(CONFIG_FILES_ENV, "").split(",")):
        if path:
            values.update(_read_file(path, CONFIG_FILES_ENV))
            read.append(path)
    for path in files:
        if path:
            values.update(_read_file(path, str(path)))
            read.append(str(path))
    dotted = {k: v for k, v in environ.items() if "." in k and not k.startswith(".")}
    values.update(dotted)
    for key in [k.strip() for k in values.get(DYNAMIC_ENV_CONFIG_KEY, "").split(",")]:
        if key:
            variable = values.get(key, "").strip()
            if variable not in environ:
                raise ConfigError(
                    key, f"{DYNAMIC_ENV_CONFIG_KEY} reads it from ${variable or '?'}, "
                    "which is not set",
                )  # fmt: skip
            values[key] = environ[variable]
    source = ", ".join(read + (["the environment"] if dotted else [])) or "config"
    return PinotProperties(values, source)


@functools.cache
def process_properties() -> PinotProperties:
    """This process's Pinot keys, read once from its environment."""
    return load_properties()


def _read_file(path: str | os.PathLike, field: str) -> dict[str, str]:
    """The keys of a Java properties file; ``ConfigError`` on ``field`` (the setting that
    named the file) when it cannot be read or parsed."""
    props = Properties()
    try:
        with open(path, "rb") as handle:
            props.load(handle, "utf-8")
    except OSError as exc:
        raise ConfigError(field, f"cannot read {path}: {exc.strerror or exc}") from exc
    except (PropertyError, UnicodeDecodeError) as exc:
        raise ConfigError(field, f"{path} is not a properties file: {exc}") from exc
    return {k: v.data for k, v in props.items()}
