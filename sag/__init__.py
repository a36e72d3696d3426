"""The Small Agent Group (SAG) of seed 004: a few small local language-model agents in
roles (reasoning, knowledge retrieval, safety audit, synthesis and judge) that debate a
question in rounds and stop early once no new argument appears, with its clinical-utility
evaluation (correctness, relevance, fairness, safety, robustness, consistency, deployment
cost).

Not built yet: this package will hold the roles, retrieval, the hybrid debate, the judge,
the D-CEM-mediated variant and the evaluation suite.  It builds on :mod:`runtime` (models,
call log), :mod:`clinical` (benchmarks) and :mod:`dcem` (the mediator).  The D-CEM clinical
experiment with two diagnostic agents lives in :mod:`dcem_clinical`.
"""
