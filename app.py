"""D-CEM Studio entry point: navigation and the shared sidebar only."""
import streamlit as st

from studio.export_import import import_panel
from studio.store_scope import run_scope

st.set_page_config(page_title="D-CEM Studio", layout="wide")

pages = [
    st.Page("pages/overview.py", title="Overview", default=True),
    st.Page("pages/runs.py", title="Runs"),
    st.Page("pages/calibration.py", title="Calibration sets"),
    st.Page("pages/whatif.py", title="Loss and thresholds"),
    st.Page("pages/walkthrough.py", title="Case walkthrough"),
    st.Page("pages/experiments.py", title="Experiments"),
    st.Page("pages/review.py", title="Escalation review"),
    st.Page("pages/agent_group.py", title="Agent group"),
    st.Page("pages/sag_evaluation.py", title="Group evaluation"),
    st.Page("pages/models.py", title="Models"),
    st.Page("pages/glossary.py", title="Glossary"),
]
with run_scope():  # the page run holds the result store only while it runs
    with st.sidebar:
        st.markdown("**D-CEM Studio**")
        st.caption("Research and teaching tool, not clinical advice. "
                   "An escalated case is handed to a human reviewer.")
        import_panel()
    st.navigation(pages).run()
