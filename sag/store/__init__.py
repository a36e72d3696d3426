"""The Small Agent Group's tables in the project's DuckDB file: runs, items, messages,
outcomes and the D-CEM variant's mediator rounds (see :mod:`sag.store.tables`)."""
