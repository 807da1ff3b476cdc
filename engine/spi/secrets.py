"""Secrets in configs: masked on the way out, kept on the way back in.

Table configs and task configs carry credentials (a Kafka ``sasl.jaas.config``, a truststore
password, an S3 ``secretKey``). Every read API shows them as ``*****`` (Pinot's mask, from its
``Obfuscator``), and a config written back with the mask in place keeps the stored secret, so
a client can GET, edit and PUT a config without ever seeing or losing one.

A key names a secret when it ends (case-insensitive) with ``password``, ``secret``,
``secret key``, ``api key``, ``token``, ``keytab``, ``credential(s)`` or ``jaas.config``
(``_``, ``-``, ``.`` or a space may separate the words): Pinot's patterns, plus Kafka's JAAS
config, which holds a password.
"""

from __future__ import annotations

import re

import orjson

MASK = "*****"
_SECRET_KEY = re.compile(
    r".*(password|secret|secret[\s_.-]*key|api[\s_.-]*key|token|keytab|credentials?"
    r"|jaas[\s_.-]*config)$",
    re.IGNORECASE,
)


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and _SECRET_KEY.match(key) is not None


def mask_secrets(value):
    """A copy of ``value`` (JSON: dicts, lists, scalars) with every secret's value masked, in
    JSON held in a string too (a ZNRecord keeps a table config's sections as JSON text); an
    empty or null secret stays as it is, so the mask never claims a secret that is not there."""
    if isinstance(value, dict):
        return {
            k: MASK if is_secret_key(k) and v not in (None, "") else mask_secrets(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]
    inner = _embedded(value)
    if inner is None:
        return value
    masked = mask_secrets(inner)
    return value if masked == inner else orjson.dumps(masked).decode()


def restore_secrets(new, stored):
    """``new`` with each masked secret replaced by the value at the same place (same keys,
    same list positions, inside JSON text too) in ``stored``; a mask with nothing stored
    there stays."""
    if isinstance(new, dict) and isinstance(stored, dict):
        return {
            k: stored[k] if v == MASK and is_secret_key(k) and k in stored
            else restore_secrets(v, stored.get(k))
            for k, v in new.items()
        }  # fmt: skip
    if isinstance(new, list) and isinstance(stored, list):
        return [
            restore_secrets(v, stored[i] if i < len(stored) else None) for i, v in enumerate(new)
        ]
    inner, inner_stored = _embedded(new), _embedded(stored)
    if inner is None or inner_stored is None:
        return new
    restored = restore_secrets(inner, inner_stored)
    return new if restored == inner else orjson.dumps(restored).decode()


def mask_znode(data: bytes) -> bytes:
    """A znode's data with its secrets masked; data that is not JSON is returned as it is."""
    document = _json(data)
    if document is None:
        return data
    masked = mask_secrets(document)
    return data if masked == document else orjson.dumps(masked, option=orjson.OPT_INDENT_2)


def restore_znode(data: bytes, stored: bytes | None) -> bytes:
    """``data`` about to be written over ``stored``, with masked secrets given back theirs."""
    new, old = _json(data), _json(stored or b"")
    if new is None or old is None:
        return data
    restored = restore_secrets(new, old)
    return data if restored == new else orjson.dumps(restored, option=orjson.OPT_INDENT_2)


def _json(data: bytes):
    if not data or data.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _embedded(value):
    """The JSON object or array a string holds, else None."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        return _json(value.encode())
    return None
