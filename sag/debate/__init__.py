"""A group playing one item: agent turns through the model runtime (:mod:`sag.debate.engine`,
one runner per model key), the hybrid debate of seed 004 (:mod:`sag.debate.hybrid`), its stop
and answer rules, the baselines, D-CEM as the stopping rule, how a debate turned, and one item
answered by any method with its result (:mod:`sag.debate.answer`, :mod:`sag.debate.results`)."""
