"""Start the dashboard: ``python -m studio.serve [streamlit options]``.

Same as ``streamlit run app.py``, except that

* on first start, when the default result store (:func:`common.db.default_db_path`,
  ``$DCEM_DB``) holds no runs, the demo runs the project ships are imported into it
  (:func:`dcem.store.demo.ensure_demo`), with one line saying so; a store that holds runs is
  left untouched, and a failure (the file busy, say) is reported in one line and the
  dashboard starts anyway; ``DCEM_DEMO=0`` in the environment skips this step;
* Streamlit is told up front that the app routes with ``st.navigation``.  Otherwise a
  server whose first visitor opens a deep link (say ``/walkthrough``) would treat the
  ``pages/`` folder as an old-style page directory for that session and skip ``app.py``
  (its navigation titles and shared sidebar).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import duckdb
from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

from common.db import default_db_path
from common.errors import ProjectError
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS, ensure_demo
from sag.views.featured import ensure_featured
from sag.store.tables import SagStore

__all__ = ["APP", "first_start", "main"]

APP = Path(__file__).resolve().parent.parent / "app.py"


def _holds_runs(path: Path) -> bool:
    """Whether the store file holds at least one run (read-only look; StoreError when busy)."""
    if not path.exists():
        return False
    with Store(path, read_only=True) as store:
        return store.holds_runs()


def first_start(path: str | os.PathLike[str] | None = None,
                exports: tuple[Path, ...] = DEMO_EXPORTS) -> str | None:
    """Import the demo runs into the store ``path`` (default: the default store) when it
    holds no runs.  Returns the one line to print, or None when the store already held
    runs (it is then not opened for writing).  Never raises for a busy or unreadable store
    or a broken export: the line says what went wrong."""
    target = Path(path) if path is not None else default_db_path()
    try:
        if _holds_runs(target):
            return None
        with Store(target) as store:
            imported = ensure_demo(store, exports)
        with SagStore(target) as sag_store:
            sag_rows = ensure_featured(sag_store) if exports == DEMO_EXPORTS else 0
    except (ProjectError, OSError, duckdb.Error) as exc:
        return f"D-CEM Studio: demo data not imported into {target} ({exc}); starting without it."
    if not imported:
        return None
    featured = " and the Small Agent Group's featured debates" if sag_rows else ""
    return (f"D-CEM Studio: the store {target} held no runs; imported {len(imported)} demo runs "
            f"({', '.join(imported)}){featured} from the shipped exports.")


def main(argv: list[str] | None = None) -> None:
    line = first_start() if os.environ.get("DCEM_DEMO", "1") != "0" else None
    if line:
        print(line, flush=True)
    PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
