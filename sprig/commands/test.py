"""`sprig test`: lint, the import contract and the pytest suite, as CI runs them."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from sprig.runtime import REPO_ROOT


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "test",
        help="run ruff, the import contract and the whole test suite (what CI runs)",
        description="Run ruff (lint and format check), import-linter (the packages' layers; "
        "engine/ imports no Django) and pytest. Extra arguments go to pytest, e.g. "
        "`sprig test -m 'not slow'` for the fast part or `sprig test tests/engine -x`.",
        allow_abbrev=False,
    )
    parser.add_argument("--no-lint", action="store_true", help="skip ruff and import-linter")
    # every other argument, options first or not, goes to pytest as given (an argparse
    # REMAINDER positional refused `sprig test -m 'not slow'`): see sprig.cli.main
    parser.set_defaults(func=run, passthrough="pytest_args")


def _step(title: str, argv: list[str]) -> int:
    print(f"==> {title}", flush=True)
    return subprocess.run(argv, cwd=REPO_ROOT, check=False).returncode


CHROMIUM = "/usr/bin/chromium"


def _ensure_chromium() -> int:
    """The browser tests drive Debian's chromium; install it (as root, via apt) when missing."""
    if os.path.exists(CHROMIUM):
        print(f"==> chromium: {CHROMIUM} is present, skipping install", flush=True)
        return 0
    if os.geteuid() != 0:
        print(
            f"==> chromium: {CHROMIUM} is missing and we are not root, so the browser tests will "
            "fail; install it with `sudo apt-get install chromium`, or leave them out with "
            "`-m 'not browser'`",
            flush=True,
        )
        return 0
    print(
        f"==> chromium: {CHROMIUM} is missing; running apt-get update && apt-get install -y chromium"
    )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        code = subprocess.run(argv, check=False, env=env).returncode
        if code != 0:
            return code
    return 0


def run(args: argparse.Namespace) -> int:
    bindir = f"{sys.prefix}/bin"
    code = _ensure_chromium()
    if code != 0:
        print(f"sprig test: installing chromium failed (exit {code})", file=sys.stderr)
        return code
    if not args.no_lint:
        for title, argv in (
            ("ruff check", [f"{bindir}/ruff", "check", "."]),
            ("ruff format --check", [f"{bindir}/ruff", "format", "--check", "."]),
            ("import contract (lint-imports)", [f"{bindir}/lint-imports"]),
        ):
            code = _step(title, argv)
            if code != 0:
                print(f"sprig test: {title} failed (exit {code})", file=sys.stderr)
                return code
    code = _step("pytest", [sys.executable, "-m", "pytest", *args.pytest_args])
    if code == 5:
        print("sprig test: pytest collected no tests", file=sys.stderr)
    return code
