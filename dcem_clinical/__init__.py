"""The D-CEM clinical experiment (seed 003, App. D.2, G, H): two local language-model
diagnostic agents on DDXPlus-8 or MedQA-Tri, mediated by :mod:`dcem` (CONTINUE notes,
steer cues), beside the Single, Free discussion and Pool baselines.  Command line:
``python -m dcem_clinical run | models``."""
