"""Take the README's screenshots of the dashboard: ``python scripts/screenshots.py [OUT_DIR]``.

Starts the dashboard on a fresh store in a temporary folder (the first start imports the
shipped demo runs), opens the first visit, a walkthrough of an escalated case and the
what-if page in Debian's chromium, and writes PNG files to OUT_DIR (default
docs/screenshots).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.browser import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402
def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the dashboard stopped while starting")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the dashboard did not start within 120 s")


def _escalated_case(db: Path) -> tuple[str, str, int]:
    from dcem.store.case_reads import longest_escalated_case
    from dcem.store.database import Store

    with Store(db, read_only=True) as store:
        found = longest_escalated_case(store, "synthetic", "dcem")
    if found is None:
        raise SystemExit("the demo store holds no escalated case")
    return found


def _shoot(page: object, url: str, out: Path, wait_text: str, height: int, run: str | None = None) -> None:
    """Open ``url`` (then pick the run whose name contains ``run``), wait for ``wait_text``."""
    # the app scrolls inside its main container, so a tall window stands in for a full-page shot
    page.set_viewport_size({"width": 1400, "height": height})  # type: ignore[attr-defined]
    page.goto(url)  # type: ignore[attr-defined]
    page.get_by_text(wait_text).first.wait_for(timeout=120_000)  # type: ignore[attr-defined]
    if run is not None:
        page.locator('[data-testid="stSelectbox"]', has_text="Run").first.click()  # type: ignore[attr-defined]
        page.get_by_role("option", name=run, exact=False).first.click()  # type: ignore[attr-defined]
        time.sleep(2)
        page.get_by_text(wait_text).first.wait_for(timeout=120_000)  # type: ignore[attr-defined]
    time.sleep(4)  # let the charts draw
    page.screenshot(path=str(out))  # type: ignore[attr-defined]
    print(f"wrote {out}")


def main(argv: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    out = Path(argv[0]) if argv else ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.duckdb"
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "studio.serve", "--server.port", str(port),
                                 "--server.address", "127.0.0.1", "--server.headless", "true"],
                                cwd=ROOT, env=dict(os.environ, DCEM_DB=str(db)))
        url = f"http://127.0.0.1:{port}"
        try:
            _wait(url, proc)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                _shoot(page, url, out / "first_visit.png", "Where to start", 1700)
                run_id, case_id, rounds = _escalated_case(db)
                _shoot(page, f"{url}/walkthrough?run={run_id}&case={case_id}&round={rounds}", out / "walkthrough.png",
                       "Why STOP_AND_ESCALATE", 2000)
                _shoot(page, f"{url}/whatif", out / "whatif.png", "Metrics over", 2900, run="seed world")
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main(sys.argv[1:])
