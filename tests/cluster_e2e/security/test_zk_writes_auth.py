"""With access control on, only a principal limited to no table, holding Pinot's UPDATE and
DELETE permissions, may rewrite znodes by hand (issue 28, item 7; issue 26's principals): a
controller process of its own, with such a principal, one limited to a table and a reader."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from tests.secured_controller import secured_controller

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PASSWORD = "pw-for-tests-7"


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory) -> Iterator[tuple[str, str]]:
    users = {"analyst": {"password": PASSWORD, "tables": "airlineStats"},
             "reader": {"password": PASSWORD, "permissions": "READ"},
             "admin": {"password": PASSWORD}}  # fmt: skip
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


def test_only_an_unlimited_principal_may_put_or_delete_znodes(secured):
    base, cluster = secured
    path = {"path": f"/{cluster}/scratch", "data": "hello"}
    anonymous = _session(base, None)
    assert anonymous.put(f"{base}/zk/put", params=path, timeout=10).status_code == 401
    for user in ("analyst", "reader"):
        session = _session(base, user)
        assert session.put(f"{base}/zk/put", params=path, timeout=10).status_code == 403, user
        assert session.delete(f"{base}/zk/delete", params=path, timeout=10).status_code == 403
        assert session.get(f"{base}/zk/ls", params={"path": f"/{cluster}"},
                           timeout=10).status_code == 200  # fmt: skip
    admin = _session(base, "admin")
    assert admin.put(f"{base}/zk/put", params=path, timeout=10).status_code == 200
    assert admin.get(f"{base}/zk/get", params=path, timeout=10).content == b"hello"
    assert admin.delete(f"{base}/zk/delete", params=path, timeout=10).status_code == 200
    assert requests.get(f"{base}/health", timeout=10).text == "OK"
