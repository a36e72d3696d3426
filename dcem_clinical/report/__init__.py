"""The clinical reports: Tables 6, 7 and 1 of the paper from stored runs or a run export
(``tables``), their REPRODUCTION markdown beside the paper's numbers (``markdown``,
``paper``), each panel member's accuracies (``agents``), paired bootstrap intervals of
D-CEM against each baseline (``paired``), and ``python -m dcem_clinical report``
(``command``)."""
