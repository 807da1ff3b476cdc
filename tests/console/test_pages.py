"""The console's pages as Django serves them: navigation, local assets, login when auth is on,
and CSRF protection on writes from a browser session (no browser or cluster needed)."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from engine.runtime.access import access_control, basic_token
from engine.runtime.properties import PinotProperties
from sprig.runtime import REPO_ROOT

PAGES = [
    "/console/query",
    "/console/cluster",
    "/console/tables",
    "/console/tables/airlineStats",
    "/console/zookeeper",
    "/console/tasks",
]
NAV = ["Query", "Cluster", "Tables", "ZooKeeper", "Tasks", "Kafka consumers"]
JS_DIR = REPO_ROOT / "static" / "console" / "js"


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_with_the_top_navigation_and_a_csrf_cookie(client, path):
    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    labels = re.findall(r'<a href="/console/[a-z]+" data-nav="[a-z]+"[^>]*>([^<]+)</a>', html)
    assert labels == NAV
    assert html.count('aria-current="page"') == 1
    assert "csrftoken" in response.cookies


def test_the_root_opens_the_query_console(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/console/query"


@pytest.mark.parametrize("path", PAGES)
def test_pages_load_only_local_assets_that_exist(client, path):
    html = client.get(path).content.decode()
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    for asset in assets:
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not served"
    assert not re.search(r'(?:src|href)="(?:https?:)?//', html), "the machines have no internet"


def test_every_module_import_of_the_scripts_resolves_to_a_local_file():
    scripts = sorted(JS_DIR.glob("*.js"))
    assert scripts
    for script in scripts:
        text = script.read_text()
        for target in re.findall(r'from\s+"(\.{1,2}/[^"]+)"', text):
            assert (script.parent / target).resolve().is_file(), f"{script.name} imports {target}"
        assert not re.search(r"https?://", text), f"{script.name} reaches outside the controller"


def test_the_scripts_write_only_with_the_csrf_header():
    api = (JS_DIR / "api.js").read_text()
    assert 'headers["X-CSRFToken"] = csrfToken()' in api
    others = [p for p in JS_DIR.glob("*.js") if p.name != "api.js"]
    for script in others:
        assert "fetch(" not in script.read_text(), f"{script.name} bypasses api.js"


def sign_in(browser: Client, user: str = "analyst", password: str = "s3cret-pass") -> None:
    token = browser.get("/console/login").cookies["csrftoken"].value
    response = browser.post("/console/login", {"username": user, "password": password,
                            "csrfmiddlewaretoken": token})  # fmt: skip
    assert response.status_code == 302, response.content


@pytest.mark.django_db
class TestLogin:
    """The console signs in with Pinot's controller principals."""

    @pytest.fixture(autouse=True)
    def user(self, settings):
        props = PinotProperties({
            "controller.admin.access.control.factory.class": "BasicAuthAccessControlFactory",
            "controller.admin.access.control.principals": "analyst",
            "controller.admin.access.control.principals.analyst.password": "s3cret-pass",
        })  # fmt: skip
        settings.PINOT_PROPERTIES = props
        settings.ACCESS_CONTROL = access_control(props, "controller")
        settings.AUTH_ENABLED = True

    def test_pages_redirect_to_the_login_page(self, client):
        response = client.get("/console/tables?x=1")
        assert response.status_code == 302
        assert response["Location"] == "/console/login?next=%2Fconsole%2Ftables%3Fx%3D1"
        login = client.get(response["Location"])
        assert login.status_code == 200
        assert b'name="csrfmiddlewaretoken"' in login.content

    def test_a_wrong_password_is_refused_and_a_right_one_signs_in(self, user):
        browser = Client(enforce_csrf_checks=True)
        page = browser.get("/console/login?next=/console/zookeeper")
        token = page.cookies["csrftoken"].value
        refused = browser.post("/console/login", {"username": "analyst", "password": "nope",
                               "next": "/console/zookeeper", "csrfmiddlewaretoken": token})  # fmt: skip
        assert refused.status_code == 200
        assert b"Wrong username or password" in refused.content
        signed_in = browser.post("/console/login", {"username": "analyst", "password": "s3cret-pass",
                                 "next": "/console/zookeeper", "csrfmiddlewaretoken": token})  # fmt: skip
        assert signed_in.status_code == 302
        assert signed_in["Location"] == "/console/zookeeper"
        page = browser.get("/console/zookeeper")
        assert page.status_code == 200
        assert b"analyst" in page.content and b"Sign out" in page.content

    def test_the_login_form_itself_needs_the_csrf_token(self, user):
        browser = Client(enforce_csrf_checks=True)
        response = browser.post(
            "/console/login", {"username": "analyst", "password": "s3cret-pass"}
        )
        assert response.status_code == 403

    def test_api_writes_from_a_signed_in_session_need_the_csrf_header(self, user):
        browser = Client(enforce_csrf_checks=True)
        sign_in(browser)
        token = browser.get("/console/query").cookies["csrftoken"].value
        body = {"dimensionFieldSpecs": []}
        refused = browser.post("/schemas/validate", body, content_type="application/json")
        assert refused.status_code == 403
        assert "CSRF" in refused.content.decode()
        accepted = browser.post("/schemas/validate", body, content_type="application/json",
                                HTTP_X_CSRFTOKEN=token)  # fmt: skip
        assert accepted.status_code == 400  # past CSRF: the schema itself is invalid
        assert "schemaName" in accepted.content.decode()

    def test_sign_out(self, user, client):
        sign_in(client)
        assert client.get("/console/query").status_code == 200
        response = client.post("/console/logout")
        assert response.status_code == 302
        assert client.get("/console/query").status_code == 302

    def test_the_same_principal_signs_in_scripts_with_basic_and_others_get_401(self, client):
        token = basic_token("analyst", "s3cret-pass")
        assert client.get("/schemas", HTTP_AUTHORIZATION=token).status_code == 200
        for header in ({}, {"HTTP_AUTHORIZATION": basic_token("analyst", "nope")}):
            response = client.get("/schemas", **header)
            assert response.status_code == 401
            assert response.json() == {"code": 401, "error": "HTTP 401 Unauthorized"}
            assert "WWW-Authenticate" not in response
        assert client.get("/health").status_code == 200
        assert client.get("/auth/info").json() == {"workflow": "BASIC"}
