"""With SPRIG_AUTH_ENABLED, only a staff user may rewrite znodes by hand (issue 28, item 7):
a controller process of its own, with a staff and a plain user."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from tests.secured_controller import secured_controller

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PASSWORD = "pw-for-tests-7"


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory) -> Iterator[tuple[str, str]]:
    users = {"analyst": {"password": PASSWORD}, "admin": {"password": PASSWORD, "is_staff": True}}
    with secured_controller(zookeeper.address, tmp_path_factory.mktemp("secured"), users) as got:
        yield got


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
