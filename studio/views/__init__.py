"""View-models of the dashboard's pages: what a page shows, computed without a browser.

Each module here turns stored runs, uploads or typed fields into the tables, notes, links
and checked inputs one page shows (the case walkthrough, the escalation review, the
calibration set, the launch form, the loss table, metric tables, run comparison, answer
chance).  They are pure Python over the libraries below (``dcem``, ``common``): no module
here imports Streamlit (a contract in ``pyproject.toml`` keeps it so), so each is tested
directly, without a browser.  The pages and the Streamlit helpers in ``studio`` call them.
"""
