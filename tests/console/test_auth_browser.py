"""With access control on, the console asks for a sign-in with the controller's principals
(Pinot's keys), and every write the scripts make through the REST API passes Django's CSRF
check (a controller process of its own, on an empty cluster)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from playwright.sync_api import expect

from tests.console.conftest import screenshot
from tests.secured_controller import secured_controller as start_secured

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

USER, PASSWORD = "analyst", "s3cret-pass-42"


@pytest.fixture(scope="module")
def secured_controller(zookeeper, tmp_path_factory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("secured_controller")
    with start_secured(zookeeper.address, workdir, {USER: {"password": PASSWORD}}) as (url, _):
        yield url


@pytest.fixture
def secured_page(browser, secured_controller) -> Iterator:
    context = browser.new_context(
        base_url=secured_controller, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"uncaught script errors: {errors}"


def test_login_then_create_a_schema_through_the_csrf_protected_api(
    secured_page, secured_controller
):
    page = secured_page
    assert requests.get(f"{secured_controller}/schemas", timeout=10).status_code in (401, 403)

    page.goto("/console/tables")
    expect(page).to_have_url(f"{secured_controller}/console/login?next=%2Fconsole%2Ftables")
    page.get_by_label("Username").fill(USER)
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("Wrong username or password")
    screenshot(page, "login")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{secured_controller}/console/tables")
    expect(page.locator(".topbar")).to_contain_text(f"{USER} · Sign out")

    page.get_by_role("button", name="Add Schema").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_test_id("json-input").locator(".cm-content").click()
    page.keyboard.insert_text(
        '{"schemaName": "secured", "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING"}]}'
    )
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#schemas")).to_contain_text("secured")

    # the same write without the CSRF header is refused for this browser session
    status = page.evaluate(
        """async () => (await fetch('/schemas', {method: 'POST', credentials: 'same-origin',
             headers: {'Content-Type': 'application/json'},
             body: JSON.stringify({schemaName: 'sneaky', dimensionFieldSpecs: []})})).status"""
    )
    assert status == 403

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{secured_controller}/console/login")
