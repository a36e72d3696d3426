"""Clinical data and tasks: the DDXPlus-8 vignettes, MedQA-Tri, the question benchmarks and
safety requests, class-stratified CAL/TEST splits and the fixed TRAIN / HELD-OUT / reserved
partition training draws from, read from the files shipped in ``data/`` with their
SOURCE.md.  No model is loaded here."""
