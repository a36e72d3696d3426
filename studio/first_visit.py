"""The Overview's first-visit parts: where to start (three steps with links to the
pages), the demo-data button for an empty store, and the glossary in words (its terms:
:mod:`studio.views.glossary`).

Page links work only under ``st.navigation`` (the app run through ``app.py``); a page
script run on its own gets the page names in bold instead (:func:`page_link`).
"""
from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

from common.errors import ProjectError
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS
from dcem.store.run_import import stored_run_ids
from studio.literal import literal
from studio.views.glossary import Term

__all__ = ["START_STEPS", "page_link", "start_steps", "offer_demo", "show_terms"]

# (page script, page title, what to do there)
START_STEPS: tuple[tuple[str, str, str], ...] = (
    ("pages/walkthrough.py", "Case walkthrough",
     "Step through one case round by round: each agent's report, the energy against eps_safe and "
     "eps_low, and the mediator's action (continue, challenge, certify or escalate)."),
    ("pages/whatif.py", "Loss and thresholds",
     "Change the loss matrix or a threshold and see every stored case re-scored at once, next to the "
     "run's original metrics."),
    ("pages/experiments.py", "Experiments",
     "Run your own synthetic experiment and compare the methods, or two runs."),
)


def page_link(page: str, label: str) -> None:
    """A link to ``page`` (a script path such as ``pages/walkthrough.py``), or its name in
    bold when the page runs outside the app's navigation."""
    try:
        st.page_link(page, label=label)
    except StreamlitAPIException:
        st.markdown(f"**{label}**")


def start_steps() -> None:
    """Where to start: three numbered steps, each with a link to its page."""
    st.subheader("Where to start")
    for number, (page, title, what) in enumerate(START_STEPS, start=1):
        left, right = st.columns([1, 3])
        with left:
            page_link(page, f"{number}. {title}")
        right.markdown(what)


def offer_demo(db: Store) -> bool:
    """For a store without runs: a "Create demo data" button that imports the shipped demo
    runs.  Returns whether the store holds runs now."""
    if stored_run_ids(db):
        return True
    st.info("The result store holds no runs yet. Create the demo data (three synthetic runs of the full "
            "grid and nine clinical runs shipped with the project; the pages then open on the DDXPlus-8 run "
            "of two statistical members that each read part of a case, where D-CEM certifies, steers and "
            "escalates cases side by side) or run an experiment from the Experiments page or with "
            "`python -m dcem run synthetic`.")
    if not st.button("Create demo data", key="overview_create_demo", type="primary"):
        return False
    from common.run_export import import_runs_export
    from studio.run_kinds import load_kinds

    kinds, imported = load_kinds(), []
    try:
        with st.spinner("Importing the demo runs (the same import as the sidebar's)"):
            for folder in DEMO_EXPORTS:  # each export is its own transaction
                imported += [run_id for run_id, _ in import_runs_export(db.path, folder, kinds).runs]
    except ProjectError as exc:
        st.error(f"The demo data could not be imported: {literal(exc)}")
        return bool(stored_run_ids(db))
    st.success(f"Imported {len(imported)} demo runs: {', '.join(imported)}.")
    return True


def show_terms(terms: dict[str, Term]) -> None:
    """One line per term: its words, its name as the code and settings spell it, its meaning."""
    st.markdown("\n".join(f"- **{t.words}** (`{name}`): {t.help}" for name, t in terms.items()))
