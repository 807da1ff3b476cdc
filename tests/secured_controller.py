"""A controller process with Pinot's Basic-auth principals on an empty cluster of its own (the
console's login tests, the ZooKeeper API's and the access-control tests)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

from sprig.stack.cluster import controller_process
from sprig.stack.process import free_port

CONTROLLER = "controller.admin.access.control"
BASIC_FACTORY = "org.apache.pinot.controller.api.access.BasicAuthAccessControlFactory"


def principal_keys(prefix: str, users: dict[str, dict]) -> dict[str, str]:
    """Pinot's principal keys under ``prefix`` for ``users``: name -> {"password", and
    optionally "tables", "excludeTables", "permissions"}."""
    keys = {f"{prefix}.principals": ",".join(users)}
    for name, fields in users.items():
        keys.update({f"{prefix}.principals.{name}.{k}": v for k, v in fields.items()})
    return keys


def write_properties(path: Path, keys: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
    return path


@contextlib.contextmanager
def secured_controller(zk_address: str, workdir: Path, users: dict[str, dict],
                       extra_keys: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:  # fmt: skip
    """Yields (controller URL, cluster name), the principals read from a Pinot properties
    file (``SPRIG_PINOT_CONFIG``)."""
    cluster = f"secured_{uuid.uuid4().hex[:8]}"
    conf = write_properties(workdir / "pinot-controller.conf", {
        f"{CONTROLLER}.factory.class": BASIC_FACTORY,
        **principal_keys(CONTROLLER, users), **(extra_keys or {}),
    })  # fmt: skip
    env = {
        "SPRIG_ZK": zk_address, "SPRIG_CLUSTER_NAME": cluster,
        "SPRIG_DATA_DIR": str(workdir / "data"), "SPRIG_PINOT_CONFIG": str(conf),
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }  # fmt: skip
    port = free_port()
    process = controller_process(workdir, port, env)
    process.start()
    try:
        process.wait_ready()
        yield f"http://127.0.0.1:{port}", cluster
    finally:
        process.stop()
