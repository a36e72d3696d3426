"""The Small Agent Group (SAG) of seed 004: a few small local language-model agents in
roles (reasoning, knowledge retrieval, safety audit, synthesis and judge) that debate a
multiple-choice question in rounds and stop once no new argument appears.

- :mod:`sag.config`: roles, sizes (6 / 10 / 15), backbones, methods, presets;
- :mod:`sag.prompts`, :mod:`sag.transcript`: what each agent reads; what a turn records;
- :mod:`sag.engine`: turns through the model runtime and its call log (cache, resume);
- :mod:`sag.retrieval`: bm25s indexes over the shipped corpora;
- :mod:`sag.debate`, :mod:`sag.decide`: the hybrid debate (Fig. 2), stop and answer rules;
- :mod:`sag.baselines`: single agent, majority vote (Table 3);
- :mod:`sag.mediated`: D-CEM as the stopping rule; :mod:`sag.group`: one item, any method;
- :mod:`sag.run`, :mod:`sag.store`, :mod:`sag.report`: resumable runs, tables, summaries;
- :mod:`sag.runners`: one turn runner per model key (batched llama.cpp by default);
- :mod:`sag.cli`: ``python -m sag ask | run | report``.

What the dashboard's Agent group and Group evaluation pages show is computed above this
package, in ``studio.views`` (``sag_group_view``, ``sag_eval_view``, ``sag_launch``, ...).
Choices the seed leaves open are listed in ``docs/sag.md``.  It builds on :mod:`runtime`
(models, call log), :mod:`clinical` (benchmarks, corpora) and :mod:`dcem` (the mediator).
"""
