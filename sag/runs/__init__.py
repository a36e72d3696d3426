"""SAG runs: a resumable run of a group on a benchmark's items through the one runner
(:mod:`sag.runs.run`, :mod:`sag.runs.item_job`), its kind of run, its exports (the compact
store export, the older runs export) and what is read from them (reports, comparisons, the
shipped runs, the packaged models' capability), and ``python -m sag ask``."""
