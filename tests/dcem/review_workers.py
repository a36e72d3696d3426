"""Child-process workers for the multi-process review tests (importable under spawn)."""
from __future__ import annotations

from typing import Any

import dcem.store.reviews as reviews
from common.db import StoreBusyError
from dcem.store.database import Store


class _CountingStore(Store):
    """A Store that counts the times the file was held by another process."""

    busy = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().__init__(*args, **kwargs)
        except StoreBusyError:
            type(self).busy += 1
            raise


def reviewer(path: str, run_id: str, case_id: str, label: str, who: str, n: int, start: Any, out: Any) -> None:
    """Record ``n`` reviews, opening and closing the store for each one (as a page
    handling one form submission would); put (who, busy retries, error) on ``out``."""
    reviews.Store = _CountingStore  # type: ignore[misc]
    start.wait(timeout=60)
    try:
        for i in range(n):
            reviews.record_review_in(path, run_id=run_id, case_id=case_id, method="dcem", final_label=label,
                                     comment=f"{who} {i}", reviewer=who)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out.put((who, _CountingStore.busy, f"{type(exc).__name__}: {exc}"))
    else:
        out.put((who, _CountingStore.busy, None))


def holder(path: str, ready: Any, release: Any) -> None:
    """Hold the store open until ``release`` is set."""
    with Store(path):
        ready.set()
        release.wait(timeout=60)
