"""Child-process workers for the two-dashboard tests (importable under spawn): each one
is a whole dashboard process (the entry script under AppTest) used by one reviewer."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import common.db as common_db

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _count_busy() -> list[int]:
    """Patch the store's file opening to count the times another process held it."""
    busy = [0]
    open_held = common_db.open_held

    def counting(path: Path, *, read_only: bool, **kwargs: Any) -> Any:
        try:
            return open_held(path, read_only=read_only, **kwargs)
        except common_db.StoreBusyError:
            busy[0] += 1
            raise

    common_db.open_held = counting  # type: ignore[assignment]
    return busy


def reviewer(path: str, who: str, n: int, start: Any, out: Any) -> None:
    """Open the Escalation review page through the entry script and submit ``n`` reviews
    of the first queued case; put (who, busy opens, error or None) on ``out``."""
    from streamlit.testing.v1 import AppTest

    os.environ["DCEM_DB"] = path
    busy = _count_busy()
    try:
        at = AppTest.from_file(APP, default_timeout=120).run()
        at.switch_page("pages/review.py").run()
        start.wait(timeout=120)
        for i in range(n):
            at.text_area(key="rv_comment").set_value(f"{who} {i}")
            at.text_input(key="rv_reviewer").set_value(who)
            at.selectbox(key="rv_label").set_value("k0")
            at.button(key="FormSubmitter:rv_form-Record review").click().run()
            problems = [e.value for e in at.error] + [str(e.value) for e in at.exception]
            if problems or not any("recorded" in s.value for s in at.success):
                raise RuntimeError(f"review {i} did not land: {problems}")
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out.put((who, busy[0], f"{type(exc).__name__}: {exc}"))
    else:
        out.put((who, busy[0], None))
