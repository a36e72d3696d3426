"""Start the dashboard: ``python -m studio.serve [streamlit options]``.

Same as ``streamlit run app.py``, except that Streamlit is told up front that the app
routes with ``st.navigation``.  Otherwise a server whose first visitor opens a deep link
(say ``/walkthrough``) would treat the ``pages/`` folder as an old-style page directory
for that session and skip ``app.py`` (its navigation titles and shared sidebar).
"""
from __future__ import annotations

import sys
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

APP = Path(__file__).resolve().parent.parent / "app.py"


def main(argv: list[str] | None = None) -> None:
    PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
