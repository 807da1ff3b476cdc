"""The settings' safe defaults, read as a fresh process reads them: the hosts the controller
answers to, and production's cookies and HSTS."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SHOW = (
    "import json; from django.conf import settings as s; print(json.dumps({"
    "'hosts': s.ALLOWED_HOSTS, 'cookie': s.SESSION_COOKIE_SECURE, "
    "'csrf_cookie': s.CSRF_COOKIE_SECURE, 'hsts': s.SECURE_HSTS_SECONDS, "
    "'input_roots': s.INPUT_ROOTS, 'output_roots': s.OUTPUT_ROOTS}))"
)


def settings_of(module: str, tmp_path, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("SPRIG_", "DJANGO_"))}  # fmt: skip
    clean.update({"DJANGO_SETTINGS_MODULE": module, "SPRIG_DATA_DIR": str(tmp_path), **env})
    out = subprocess.run([sys.executable, "-c", SHOW], env=clean, capture_output=True,
                         text=True, check=True, timeout=60)  # fmt: skip
    return json.loads(out.stdout)


def test_local_defaults_answer_to_loopback_names_and_read_only_the_data_dir(tmp_path):
    local = settings_of("config.settings.local", tmp_path)
    assert local["hosts"] == ["localhost", "127.0.0.1", "[::1]"]
    assert local["input_roots"] == [str(tmp_path / "incoming")] and local["output_roots"] == []
    named = settings_of("config.settings.local", tmp_path, SPRIG_CONTROLLER_HOST="controller")
    assert named["hosts"] == ["localhost", "127.0.0.1", "[::1]", "controller"]
    chosen = settings_of("config.settings.local", tmp_path, SPRIG_ALLOWED_HOSTS="sprig.example")
    assert chosen["hosts"] == ["sprig.example"]


def test_production_sets_secure_cookies_and_hsts_and_no_wildcard_host(tmp_path):
    production = settings_of("config.settings.production", tmp_path, DJANGO_SECRET_KEY="k")
    assert "*" not in production["hosts"]
    assert production["cookie"] and production["csrf_cookie"]
    assert production["hsts"] == 31_536_000
