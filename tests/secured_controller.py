"""A controller process with SPRIG_AUTH_ENABLED on an empty cluster of its own, and the
Django users a test logs in as (the console's login tests and the ZooKeeper API's)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

from sprig.runtime import REPO_ROOT
from sprig.stack.cluster import controller_process
from sprig.stack.process import free_port


@contextlib.contextmanager
def secured_controller(zk_address: str, workdir: Path,
                       users: dict[str, dict]) -> Iterator[tuple[str, str]]:  # fmt: skip
    """Yields (controller URL, cluster name); ``users``: name -> create_user keywords
    (password, is_staff ...)."""
    cluster = f"secured_{uuid.uuid4().hex[:8]}"
    env = {
        "SPRIG_ZK": zk_address, "SPRIG_CLUSTER_NAME": cluster,
        "SPRIG_DATA_DIR": str(workdir / "data"), "SPRIG_AUTH_ENABLED": "true",
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }  # fmt: skip
    port = free_port()
    process = controller_process(workdir, port, env)
    process.start()
    try:
        process.wait_ready()
        create = (
            "from django.contrib.auth import get_user_model as m; U = m().objects; "
            + "; ".join(f"U.create_user({name!r}, **{fields!r})" for name, fields in users.items())
        )
        subprocess.run([sys.executable, "manage.py", "shell", "-c", create], cwd=REPO_ROOT,
                       env={**os.environ, **env}, check=True)  # fmt: skip
        yield f"http://127.0.0.1:{port}", cluster
    finally:
        process.stop()
