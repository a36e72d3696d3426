"""Training SAG agents: a single agent's answer turn with GRPO, a group's debates as GRPO or
CTDE rollouts, a view group trained stage by stage, the adapters a group can use, and their
commands (``python -m sag train``, ``python -m sag train-views``)."""
