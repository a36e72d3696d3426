"""A whole one-option GRPO run: record, resume, train, measure, export.

The experiment builds its :class:`~training.letter_task.LetterItems` (training items and
held-out sets by name) and calls :func:`run_letter_training`.  The run's id is a hash of
the settings, the base model file and the training data; its folder ``out/<run id>``
holds the checkpoint and, at the end, the adapter as a llama.cpp GGUF LoRA file.  The
held-out sets are measured with the base (step 0) and with the trained adapters (last
step) and stored beside the curve.  After an interruption or kill -9 the same call
resumes from the last checkpoint.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from training.config import TrainSettings
from training.letter_task import LetterItems
from training.store import StepRow, TrainingRecorder, TrainingStore

__all__ = ["LetterRun", "RunResult", "HeldoutScore", "run_letter_training", "check_layers", "ADAPTER_FILE"]

log = logging.getLogger(__name__)

ADAPTER_FILE = "adapter.gguf"


@dataclass(frozen=True)
class LetterRun:
    """What one run trains: its kind (the experiment), base model key and file, settings,
    training items and their name and hash, held-out sets, and the runs folder."""

    kind: str
    base_model: str
    base_path: Path
    base_sha256: str
    settings: TrainSettings
    items: LetterItems
    data_name: str
    data_hash: str
    heldout: Mapping[str, LetterItems]
    out: Path

    @property
    def run_id(self) -> str:
        return self.settings.digest(self.kind, self.base_model, self.base_sha256, self.data_hash)


@dataclass(frozen=True)
class HeldoutScore:
    """A held-out measurement as printed: accuracy beside chance and the answer distribution."""

    n_items: int
    n_correct: int
    n_options: int
    top_letter: str
    top_share: float
    answers: tuple[str, ...] = ()
    truth: tuple[str, ...] = ()

    @property
    def accuracy(self) -> float:
        return self.n_correct / self.n_items if self.n_items else float("nan")

    def describe(self) -> str:
        return (f"{self.accuracy:.3f} ({self.n_correct} of {self.n_items}; chance {1 / self.n_options:.3f}; "
                f"most frequent answer {self.top_letter} on {self.top_share:.0%} of items)")

    def recall_lines(self, names: Mapping[str, str] | None = None) -> list[str]:
        """Recall per class, and a sentence for each class never answered right (the items'
        right answers as classes; ``names``: a class's name for its letter)."""
        from training.class_recall import never_right, recall_table

        if not self.answers:
            return []
        table = recall_table(self.truth, self.answers, names=names)
        per = ", ".join(f"{r.Class} {r.Recall:.2f}" for r in table.itertuples(index=False))
        return [f"recall per class: {per}"] + never_right(table, diagnoses=names is not None)


@dataclass(frozen=True)
class RunResult:
    run_id: str
    steps_done: int
    stopped: bool
    resumed_from: int
    before: dict[str, HeldoutScore]
    after: dict[str, HeldoutScore]
    adapter: Path | None


def _measure(store: TrainingStore | TrainingRecorder, run_id: str, step: int, model: object,
             heldout: Mapping[str, LetterItems], reference: bool, scorer: object,
             on_measure: Callable[[str, int, bool], None] | None = None) -> dict[str, HeldoutScore]:
    from training.letter_task import greedy_answers

    got = {}
    for name, items in heldout.items():
        if on_measure is not None:
            on_measure(name, len(items.ids), reference)
        result = greedy_answers(model, items, reference=reference, scorer=scorer)
        letter, share = result.top_letter
        n_options = int(items.offered.sum(axis=1).max()) if items.offered is not None else len(items.option_ids)
        store.add_eval(run_id, step, name, result.n_items, result.n_correct, n_options, letter, share)
        names = items.option_names
        store.add_answers(run_id, step, name, [(i, names[a], names[r] if r >= 0 else "")
                                               for i, a, r in zip(items.ids, result.answers, result.right)])
        got[name] = HeldoutScore(result.n_items, result.n_correct, n_options, letter, share,
                                 tuple(names[a] for a in result.answers),
                                 tuple(names[r] if r >= 0 else "" for r in result.right))
    return got


def _stored_scores(store: TrainingStore | TrainingRecorder, run_id: str, step: int) -> dict[str, HeldoutScore]:
    """The held-out measurements recorded at ``step``, as :func:`_measure` returned them."""
    evals, answers = store.evals(run_id), store.answers(run_id)
    out = {}
    for row in evals[evals["step"] == step].itertuples():
        mine = answers[(answers["step"] == step) & (answers["split"] == row.split)]
        out[str(row.split)] = HeldoutScore(int(row.n_items), int(row.n_correct), int(row.n_options), str(row.top_letter),
                                           float(row.top_letter_share), tuple(mine["answer"]), tuple(mine["truth"]))
    return out


def finished_result(store: TrainingStore | TrainingRecorder, run_id: str, steps: int) -> RunResult | None:
    """A finished run whose adapter file is where it was recorded, with the recorded sha256:
    its result as the store holds it (nothing loaded, trained or measured again).  None for a
    run not finished, or whose file is gone or changed (the run then goes through its last
    checkpoint again)."""
    from runtime.llama_backend import file_sha256

    found = store.finished_file(run_id)
    if found is None or not Path(found[0]).is_file() or file_sha256(Path(found[0])) != found[1]:
        return None
    return RunResult(run_id, steps, False, steps, _stored_scores(store, run_id, 0), _stored_scores(store, run_id, steps),
                     Path(found[0]))


def check_layers(base_path: Path, layers: int) -> None:
    """Refuse, before anything is recorded or loaded, more adapted layers than the base has."""
    from common.errors import ConfigError
    from runtime.gguf_info import read_gguf_header

    header = read_gguf_header(base_path)
    total = header.metadata.get(f"{header.architecture}.block_count")
    if isinstance(total, int) and layers > total:
        raise ConfigError("lora_layers", f"the model has {total} decoder layers, got {layers}")


def run_letter_training(store: TrainingStore | TrainingRecorder, run: LetterRun, *,
                        progress: Callable[[int, int, StepRow | None], None] | None = None,
                        should_stop: Callable[[], bool] | None = None,
                        on_measure: Callable[[str, int, bool], None] | None = None) -> RunResult:
    """Train ``run`` from its last checkpoint; ``progress`` after each step, ``on_measure``
    (set name, items, before training?) as each held-out set starts being measured."""
    import torch

    from training.base_model import add_lora, frozen_layers, load_base, set_threads
    from training.device import resolve_device
    from training.scorer import OptionScorer
    from training.checkpoint import load_checkpoint, restore, save_checkpoint
    from training.letter_task import LetterStep
    from training.loop import run_loop
    from runtime.llama_backend import file_sha256

    s, run_id = run.settings, run.run_id
    run_dir = run.out / run_id
    check_layers(run.base_path, s.lora.layers)
    store.check_start(run_id, kind=run.kind, method=s.method, base_model=run.base_model, settings=s.recorded(),
                      data_hash=run.data_hash)  # its id stored with other settings: refused before a model loads
    done = finished_result(store, run_id, s.steps)
    if done is not None:
        log.info("run %s is finished; its adapter is %s", run_id, done.adapter)
        return done
    device = resolve_device(s.device)
    set_threads(s.threads)
    torch.manual_seed(s.seed)
    model = add_lora(load_base(run.base_path, device), s.lora)
    scorer = OptionScorer(model, frozen_layers=frozen_layers(model, s.lora))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=s.learning_rate)
    rng = np.random.default_rng(s.seed)
    start = 0
    found = load_checkpoint(run_dir)
    if found is not None:
        restore(found, model, optimizer)
        rng.bit_generator.state = found.state["rng"]
        start = found.step
    # recorded once the base is loaded and the checkpoint read: a failure before leaves no row
    store.start_run(run_id, kind=run.kind, method=s.method, base_model=run.base_model, settings=s.recorded(),
                    data_name=run.data_name, data_hash=run.data_hash, n_train=len(run.items.ids))
    if found is not None:
        store.forget_after(run_id, start)
        log.info("resuming %s from step %d", run_id, start)
    before: dict[str, HeldoutScore] = {}
    if start == 0 and run.heldout:
        before = _measure(store, run_id, 0, model, run.heldout, reference=True, scorer=scorer, on_measure=on_measure)
    step = LetterStep(model, run.items, s, optimizer, rng, scorer)

    def checkpoint(k: int) -> None:
        save_checkpoint(run_dir, k, model, optimizer, {"rng": rng.bit_generator.state})

    result = run_loop(start=start, total=s.steps, step=step, record=lambda row: store.add_step(run_id, row),
                      checkpoint=checkpoint, every=s.checkpoint_every, progress=progress, should_stop=should_stop)
    if result.stopped:
        store.finish(run_id, "stopped")
        return RunResult(run_id, result.last_step, True, start, before, {}, None)
    after = _measure(store, run_id, s.steps, model, run.heldout, reference=False, scorer=scorer,
                     on_measure=on_measure) if run.heldout else {}
    from training.gguf_lora import export_lora_gguf

    adapter = export_lora_gguf(model, run.base_path, run_dir / ADAPTER_FILE, alpha=s.lora.alpha)
    store.finish(run_id, "finished", str(adapter), file_sha256(adapter))
    return RunResult(run_id, result.last_step, False, start, before, after, adapter)
