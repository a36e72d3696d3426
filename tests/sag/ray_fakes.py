"""Scripted runners for the SAG fault tests on Ray (importable by Ray workers)."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Sequence

from runtime.turns import TurnRequest, TurnResult
from tests.sag.fakes import ScriptedTurns, constant


class DieOnce(ScriptedTurns):
    """Answers like ScriptedTurns("B"), but the process dies the first time a prompt holds
    ``text`` (a marker file in ``marks`` remembers it); ``slow`` s per batch."""

    def __init__(self, text: str = "", marks: str = "", slow: float = 0.0) -> None:
        super().__init__(constant("B"))
        self.text, self.marks, self.slow = text, marks, slow

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        if self.text and any(self.text in r.messages[-1].content for r in requests):
            mark = Path(self.marks) / "died"
            if not mark.exists():
                mark.write_text("x")
                os._exit(3)
        if self.slow:
            time.sleep(self.slow)
        return super().run(requests)


def main(store: str, executor: str) -> None:
    """A driver for the kill test: SAG-6 on 6 MedQA items, slowly, on Ray or in process."""
    from common.ray_work import RayExecutor
    from sag.group.config import preset
    from sag.runs.run import SagRunSpec, run_sag
    from sag.store.tables import SagStore

    cfg = preset("sag-6").with_changes(t_max=1)
    spec = SagRunSpec("medqa", cfg, n_items=6, seed=7)
    runner = DieOnce(slow=0.3 if executor == "ray" else 0.0)
    seen = Path(store + ".progress")  # items stored so far, for the test to read while the store is held

    def progress(done: int, total: int, label: str) -> None:
        seen.write_text(str(done))

    with SagStore(store) as db:
        if executor == "ray":
            with RayExecutor(workers=2) as ex:
                run_sag(db, spec, runners={m: runner for m in cfg.models()}, retrievers={}, executor=ex,
                        progress=progress)
        else:
            run_sag(db, spec, runners={m: runner for m in cfg.models()}, retrievers={}, progress=progress)


if __name__ == "__main__":
    main(*sys.argv[1:3])
