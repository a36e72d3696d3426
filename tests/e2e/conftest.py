"""Start the real dashboard on a free local port and drive it with Debian's chromium."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.browser import CHROMIUM, CHROMIUM_ARGS, free_port
from tests.e2e.stable import PatientBrowser

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "test-output" / "e2e"
START_S = 180  # a wait, not a speed check: a loaded machine can take a minute to start the server


def _require_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI"):
        pytest.fail("chromium is missing in CI; .ci/run installs it with scripts/ensure-chromium")
    pytest.skip("Debian's chromium is not installed (scripts/ensure-chromium installs it)")


def serve_dashboard(db: Path, log_dir: Path) -> Iterator[str]:
    """The dashboard on ``db`` (via DCEM_DB) on a free port: yields its URL, stops it after."""
    port = free_port()
    env = dict(os.environ, DCEM_DB=str(db), DCEM_DEMO="0")  # the tests bring their own runs
    log = open(log_dir / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "studio.serve", "--server.port", str(port),
                             "--server.address", "127.0.0.1"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"the dashboard did not start within {START_S} s")
    yield url
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


@pytest.fixture(scope="session")
def app_url(run_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _require_chromium()
    db = tmp_path_factory.mktemp("e2e") / "runs.duckdb"
    shutil.copy(run_db, db)
    yield from serve_dashboard(db, tmp_path_factory.mktemp("e2e-log"))


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """The one Chromium of this test process: Playwright's sync API runs one instance per
    thread, so every browser test of a process (a pytest worker) shares it."""
    from playwright.sync_api import sync_playwright

    _require_chromium()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield PatientBrowser(b)  # pages wait longer than Playwright's 30 s by default
        b.close()


@pytest.fixture(scope="session")
def browser(app_url: str, chromium: object) -> object:
    return chromium


@pytest.fixture()
def shot(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    OUTPUT.mkdir(parents=True, exist_ok=True)

    def take(page: object, name: str) -> Path:
        path = OUTPUT / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
        return path

    return take
