"""The Small Agent Group (SAG) of seed 004: a few small local language-model agents in
roles (reasoning, knowledge retrieval, safety audit, synthesis and judge) that debate a
multiple-choice question in rounds and stop once no new argument appears.

Its sub-packages, from the bottom layer up (the ``sag-layers`` contract in
``pyproject.toml``: each imports only those below it):

- :mod:`sag.group`: the group's configuration (roles, sizes 6 / 10 / 15, backbones,
  methods, presets), what each member reads (prompts, member views) and what a turn records;
  :mod:`sag.retrieval`: bm25s indexes over the shipped corpora (beside it, neither imports
  the other);
- :mod:`sag.debate`: turns through the model runtime (engine, one runner per model key),
  the hybrid debate (Fig. 2), its stop and answer rules, the baselines (Table 3), D-CEM as
  the stopping rule, and one item answered by any method;
- :mod:`sag.store`: the SAG tables in the project's DuckDB file (SQL only here);
- :mod:`sag.runs`: resumable runs on the one runner, their exports, reports and
  comparisons, and ``python -m sag ask``;
- :mod:`sag.evaluation`: the clinical-utility evaluation suite (``python -m sag eval``);
- :mod:`sag.training` (GRPO and CTDE for groups and view groups) and :mod:`sag.views`
  (a view group measured);
- :mod:`sag.cli`: ``python -m sag ask | run | eval | report | ... | train``.

What the dashboard's Agent group and Group evaluation pages show is computed above this
package, in ``studio.views`` (``sag_group_view``, ``sag_eval_view``, ``sag_launch``, ...).
Choices the seed leaves open are listed in ``docs/sag.md``.  It builds on :mod:`runtime`
(models, call log), :mod:`clinical` (benchmarks, corpora) and :mod:`dcem` (the mediator).
"""
