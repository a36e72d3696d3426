"""Clinical data and tasks: the DDXPlus-8 vignettes, MedQA-Tri, and class-stratified
CAL/TEST splits, read from the files shipped in ``data/`` with their SOURCE.md.  No model
is loaded here."""
