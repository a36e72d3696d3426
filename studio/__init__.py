"""Presentation layer of the dashboard: Plotly figures and shared Streamlit widgets.

Pages call these helpers and the libraries (``dcem``, ``dcem_clinical``, ``runtime``); no numerical logic
lives here.  The pages' view-models, which import no Streamlit and are tested without a
browser, are in :mod:`studio.views`.
"""
