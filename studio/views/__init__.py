"""View-models of the dashboard's pages: what a page shows, computed without a browser.

Each module here turns stored runs, uploads or typed fields into the tables, notes, links
and checked inputs one page shows (the case walkthrough and its round reasons, the
escalation review, the calibration set, the launch form, the loss table, metric tables, run
comparison, answer chance, the glossary of both systems, the Models page's test bench, the
Agent group and Group evaluation pages).  They are pure Python over the libraries below
(``dcem``, ``sag``, ``dcem_clinical``, ``runtime``, ``common``): no module here imports
Streamlit (a contract in ``pyproject.toml`` keeps it so), so each is tested directly,
without a browser.  The pages and the Streamlit helpers in ``studio`` call them; no library
module imports them.
"""
