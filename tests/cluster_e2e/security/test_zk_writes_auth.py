"""With SPRIG_AUTH_ENABLED, only a staff user may rewrite znodes by hand (issue 28, item 7):
a controller process of its own, with a staff and a plain user."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
import requests

from sprig.runtime import REPO_ROOT
from sprig.stack.cluster import controller_process
from sprig.stack.process import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PASSWORD = "pw-for-tests-7"


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory) -> Iterator[tuple[str, str]]:
    workdir = tmp_path_factory.mktemp("secured")
    cluster = f"secured_{uuid.uuid4().hex[:8]}"
    env = {
        "SPRIG_ZK": zookeeper.address, "SPRIG_CLUSTER_NAME": cluster,
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
            f"U.create_user('analyst', password={PASSWORD!r}); "
            f"U.create_user('admin', password={PASSWORD!r}, is_staff=True)"
        )
        subprocess.run([sys.executable, "manage.py", "shell", "-c", create], cwd=REPO_ROOT,
                       env={**os.environ, **env}, check=True)  # fmt: skip
        yield f"http://127.0.0.1:{port}", cluster
    finally:
        process.stop()


def _session(base: str, user: str | None) -> requests.Session:
    session = requests.Session()
    session.get(f"{base}/console/login", timeout=10)
    token = session.cookies.get("csrftoken")
    if user is not None:
        response = session.post(f"{base}/console/login", timeout=10, data={
            "username": user, "password": PASSWORD, "csrfmiddlewaretoken": token,
        })  # fmt: skip
        assert response.ok and "sessionid" in session.cookies
    session.headers["X-CSRFToken"] = session.cookies.get("csrftoken") or ""
    return session


def test_only_staff_may_put_or_delete_znodes(secured):
    base, cluster = secured
    path = {"path": f"/{cluster}/scratch", "data": "hello"}
    for user in (None, "analyst"):
        session = _session(base, user)
        assert session.put(f"{base}/zk/put", params=path, timeout=10).status_code == 403, user
        assert session.delete(f"{base}/zk/delete", params=path, timeout=10).status_code == 403
    admin = _session(base, "admin")
    assert admin.put(f"{base}/zk/put", params=path, timeout=10).status_code == 200
    assert admin.get(f"{base}/zk/get", params=path, timeout=10).content == b"hello"
    assert admin.delete(f"{base}/zk/delete", params=path, timeout=10).status_code == 200
    assert requests.get(f"{base}/health", timeout=10).text == "OK"
