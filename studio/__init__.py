"""Presentation layer of the dashboard: Plotly figures and shared Streamlit widgets.

Pages call these helpers and the ``dcem`` and ``sag`` libraries; no numerical logic
lives here.
"""
