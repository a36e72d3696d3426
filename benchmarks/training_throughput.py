"""Training throughput of one-option GRPO on SmolLM2-135M (LoRA r=16 on every linear
projection of every layer, and of the top 8 layers only).

Measures, in one process on the DDXPlus-8 training prompts as the diagnostician sees them:
load time of the GGUF base in torch, seconds per step, items and tokens per second of an
optimiser step (forward + backward + AdamW) for batch sizes 1 and 8, the forward-only
evaluation rate, and peak RSS; with adapters on the top 8 layers the lower 22 are computed
once per prompt (:class:`training.scorer.OptionScorer`; that first pass is reported as
``prefix_s`` and not counted in the steps).  Prints one JSON line with the ratio of the two
layouts' step times.  Run on a quiet machine:

    .venv/bin/python benchmarks/training_throughput.py --steps 5
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--top-layers", type=int, default=8)
    args = parser.parse_args()

    import numpy as np
    import torch

    from clinical.datasets import load_dataset
    from dcem_clinical.diagnostician import build_items
    from runtime.llama_backend import LlamaCppBackend
    from runtime.registry import resolve
    from training.base_model import add_lora, load_base, set_threads, trainable_parameters
    from training.config import LoraSettings, TrainSettings
    from training.letter_task import LetterStep, greedy_answers

    threads = set_threads(args.threads)
    path = resolve("smollm2-135m")
    data = load_dataset("ddxplus8")
    backend = LlamaCppBackend(path, n_ctx=2048, n_threads=1, kv_cache_mb=0)
    items = build_items(backend, data.labels, data.cases[:64], max_tokens=1024, rewards=TrainSettings().rewards)
    del backend
    out: dict[str, object] = {"threads": threads,
                              "mean_prompt_tokens": round(float(np.mean([len(t) for t in items.tokens])), 1)}
    for layers in (0, args.top_layers):
        lora = LoraSettings(layers=layers)
        start = time.perf_counter()
        model = add_lora(load_base(path), lora)
        part: dict[str, object] = {"load_s": round(time.perf_counter() - start, 2),
                                   "trainable_parameters": trainable_parameters(model)}
        for batch in (1, 8):
            settings = TrainSettings(batch_size=batch, steps=args.steps, lora=lora)
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
            step = LetterStep(model, items, settings, opt, np.random.default_rng(0))
            start = time.perf_counter()
            step.reference(list(range(len(items.ids))))  # the base's policy (and the kept prefix), once per run
            part["prefix_s"] = round(time.perf_counter() - start, 2)
            rows = [step(k) for k in range(1, args.steps + 1)]
            seconds = sum(r.seconds for r in rows)
            part[f"batch{batch}"] = {"s_per_step": round(seconds / len(rows), 2),
                                     "items_per_s": round(sum(r.items for r in rows) / seconds, 2),
                                     "tokens_per_s": round(sum(r.tokens for r in rows) / seconds, 1)}
        start = time.perf_counter()
        greedy_answers(model, items, scorer=step.scorer)
        part["eval_items_per_s"] = round(len(items.ids) / (time.perf_counter() - start), 2)
        out["all_layers" if layers == 0 else f"top_{layers}_layers"] = part
        del model, step, opt
    full, top = out["all_layers"], out[f"top_{args.top_layers}_layers"]
    out["step_time_ratio_b8"] = round(full["batch8"]["s_per_step"] / top["batch8"]["s_per_step"], 2)  # type: ignore[index]
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
