"""Pinot's configuration keys (``controller.*``, ``pinot.broker.*``, ``pinot.server.*``,
``task.*`` ...) for the settings Sprig takes under Pinot's own names: access control, service
credentials, TLS listeners.

A Pinot user's ``pinot-controller.conf`` or ``pinot-broker.conf`` works unchanged: list the
files in ``SPRIG_PINOT_CONFIG`` (comma-separated, Pinot's ``config.paths``); each process
takes the keys of its own component. Keys can also be set one by one as environment
variables named exactly as the key (``pinot.broker.access.control.principals=admin``, as
docker-compose's ``environment:`` allows), which win over the files. As in Pinot,
``dynamic.env.config=k1,k2`` makes each listed key's value the name of an environment
variable to read it from, so a password need not be written in a file.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping

import javaproperties

from engine.common.errors import ConfigError

CONFIG_FILES_ENV = "SPRIG_PINOT_CONFIG"
DYNAMIC_ENV_CONFIG_KEY = "dynamic.env.config"


class PinotProperties(Mapping[str, str]):
    """Pinot keys and their string values."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = {str(k).strip(): str(v).strip() for k, v in (values or {}).items()}

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def list(self, key: str) -> list[str]:
        """A comma-separated value as its trimmed, non-empty items (absent: [])."""
        return [item.strip() for item in self.get(key, "").split(",") if item.strip()]

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.get(key, "").lower()
        if not value:
            return default
        if value not in ("true", "false"):
            raise ConfigError(key, f"must be true or false, got {self[key]!r}")
        return value == "true"

    def subset(self, prefix: str) -> PinotProperties:
        """The keys under ``prefix.`` with the prefix removed."""
        head = prefix.rstrip(".") + "."
        return PinotProperties({k[len(head) :]: v for k, v in self.items() if k.startswith(head)})


def load_properties(environ: Mapping[str, str] | None = None) -> PinotProperties:
    """The files of ``SPRIG_PINOT_CONFIG``, then dotted environment variables, then
    ``dynamic.env.config`` applied. A missing or unreadable file is a ``ConfigError`` naming
    it (a process must not start with half its access rules)."""
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for path in (p.strip() for p in environ.get(CONFIG_FILES_ENV, "").split(",")):
        if path:
            values.update(_read_file(path))
    values.update({k: v for k, v in environ.items() if "." in k and not k.startswith(".")})
    for key in [k.strip() for k in values.get(DYNAMIC_ENV_CONFIG_KEY, "").split(",")]:
        if key:
            variable = values.get(key, "").strip()
            if variable not in environ:
                raise ConfigError(
                    key, f"{DYNAMIC_ENV_CONFIG_KEY} reads it from ${variable or '?'}, "
                    "which is not set",
                )  # fmt: skip
            values[key] = environ[variable]
    return PinotProperties(values)


@functools.cache
def process_properties() -> PinotProperties:
    """This process's Pinot keys, read once from its environment."""
    return load_properties()


def _read_file(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return javaproperties.load(handle)
    except OSError as exc:
        raise ConfigError(CONFIG_FILES_ENV, f"cannot read {path}: {exc.strerror or exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(CONFIG_FILES_ENV, f"{path} is not a properties file: {exc}") from exc
