"""Does llama.cpp run a shipped diagnostician adapter as torch does, on the first held-out
cases?  The measurement behind ``data/results/training/agreement.json`` (written by
``benchmarks/adapter_agreement.py``) and ``tests/training/test_shipped_adapters.py``.

The held-out cases are the first ``items`` of the fixed HELD-OUT partition
(:func:`dcem_clinical.train_run.training_cases`), prompted as a neutral panel member in
round 1 (the prompt the adapter was trained on); the comparison itself is
:func:`training.agreement.compare_backends`.
"""
from __future__ import annotations

from typing import Any

__all__ = ["measure_agreement"]


def measure_agreement(name: str, items: int, *, threads: int = 1) -> dict[str, Any]:
    """The record of one measurement: items, same letter, mean |torch - llama.cpp| of the
    option log-probabilities, and how many of the items each backend gets right."""
    import numpy as np
    import torch

    from clinical.datasets import load_dataset
    from dcem_clinical.agent import DiagnosticAgent
    from dcem_clinical.prompts import ROLE_NEUTRAL, letters
    from dcem_clinical.train_run import training_cases
    from runtime.factory import make_backend
    from runtime.registry import resolve
    from training.agreement import compare_backends
    from training.shipped import read_shipped

    torch.set_num_threads(threads)
    shipped = read_shipped(name)
    dataset = "ddxplus8"
    _, held, _ = training_cases(dataset, items)
    labels = load_dataset(dataset).labels
    backend = make_backend(shipped.adapter_key, n_ctx=2048, n_threads=threads)
    agent = DiagnosticAgent(backend, labels, role=ROLE_NEUTRAL)
    got = compare_backends(backend, shipped.adapter, resolve(shipped.run["base_model"]),
                           [agent.messages(c.text) for c in held], letters(len(labels)))
    right = np.array([c.label for c in held])
    return {"adapter": name, "dataset": dataset, "items": got.items, "same_letter": got.same_letter,
            "mean_abs_diff": round(got.mean_abs_diff, 4),
            "torch_right": int((np.array(got.torch_letters) == right).sum()),
            "llama_cpp_right": int((np.array(got.llama_letters) == right).sum())}
