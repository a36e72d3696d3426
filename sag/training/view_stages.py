"""The later stages of training a view group (``python -m sag train-views``).

Stage ``debate`` (CTDE): the members, as the stage before left them (their adapters in the
group file's ``agent_models``), play round 0 of every case of the ``debate`` fold; each
reasoning agent's round-1 turn becomes its item (:mod:`sag.training.view_debate_data`).  The agents
train together, one adapter each on one base, with the central critic of
:mod:`sag.training.view_critic` and the exact counterfactual step of :mod:`training.team_letters`;
each also rehearses its round-0 turns on the ``members`` fold, so that what it learned of
its own view stays.  Their round-1 answers on the ``cal`` fold are measured before and
after (each agent, and their plurality).

Stage ``judge``: the group with the debate stage's members plays round 0 and round 1 up to
the judge on the ``debate`` fold; the judge's turn (the whole debate, no case) is its item
over the letters and REFUSE (exact GRPO, :func:`training.run.run_letter_training`),
measured on the ``cal`` fold.

Each stage is a resumable run of its own; it ends by writing a group file whose agents
carry the new adapters (``group-debate.json``, ``group-judge.json`` in its run folder).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from common.errors import ConfigError
from sag.group.config import AgentRole, GroupConfig
from training.config import TrainSettings
from training.store import StepRow, TrainingRecorder, TrainingStore

__all__ = ["DEBATE_KIND", "JUDGE_KIND", "StageResult", "DebateStage", "JudgeStage", "train_debate", "train_judge",
           "write_group_file", "adapter_of", "shipped_group", "exported_names"]

log = logging.getLogger(__name__)
DEBATE_KIND = "sag-view-debate"
JUDGE_KIND = "sag-view-judge"
_FILE_KEY = "+lora:file:"
_NAME_KEY = "+lora:"


def adapter_of(cfg: GroupConfig, agent_id: str) -> Path:
    """The GGUF adapter file an agent of ``cfg`` runs with: ``BASE+lora:file:PATH``, or a
    shipped adapter ``BASE+lora:NAME`` (``data/adapters/NAME.gguf``), so that a stage can
    start from a committed earlier stage."""
    from runtime.adapters import shipped_adapters, shipped_adapters_dir

    model = dict(cfg.agent_models).get(agent_id, "")
    if _FILE_KEY in model:
        return Path(model.split(_FILE_KEY, 1)[1])
    if _NAME_KEY in model:
        name = model.split(_NAME_KEY, 1)[1]
        path = shipped_adapters_dir() / f"{name}.gguf"
        if not path.is_file():
            raise ConfigError("group", f"{cfg.name}: agent {agent_id}'s adapter {name!r} is not in data/adapters/ "
                                       f"(shipped: {', '.join(shipped_adapters()) or 'none'})")
        return path
    raise ConfigError("group", f"{cfg.name}: agent {agent_id} has no adapter file (agent_models gives "
                               f"{model or 'nothing'}); train the stage before first")


def write_group_file(cfg: GroupConfig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cfg.to_dict(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class StageResult:
    run_id: str
    steps_done: int
    stopped: bool
    group_file: Path | None
    measured: dict[str, str] = field(default_factory=dict)


def _ids(cfg: GroupConfig, role: AgentRole) -> tuple[str, ...]:
    return tuple(a.agent_id for a in cfg.agents() if a.role is role)


@dataclass(frozen=True)
class DebateStage:
    """The debate stage of a view group whose members carry their first-stage adapters."""

    cfg: GroupConfig
    base_model: str
    settings: TrainSettings
    out: Path
    group_weight: float = 1.0
    fold_limit: int | None = None

    def __post_init__(self) -> None:
        if not self.cfg.views:
            raise ConfigError("group", f"{self.cfg.name} gives its members no views")
        if self.settings.supervised:
            raise ConfigError("supervised", "the debate stage (CTDE) has no log-likelihood term; leave --supervised "
                                            "at 0 (it applies to the members and judge stages)")
        for agent_id in _ids(self.cfg, AgentRole.REASONING):
            adapter_of(self.cfg, agent_id)


@dataclass(frozen=True)
class JudgeStage:
    """The judge stage of a view group whose members carry their debate-stage adapters."""

    cfg: GroupConfig
    base_model: str
    settings: TrainSettings
    out: Path
    fold_limit: int | None = None

    def __post_init__(self) -> None:
        if not self.cfg.views or len(_ids(self.cfg, AgentRole.JUDGE)) != 1:
            raise ConfigError("group", f"{self.cfg.name}: the judge stage trains the one judge of a view group")
        for agent_id in _ids(self.cfg, AgentRole.REASONING):
            adapter_of(self.cfg, agent_id)


def _fold(name: str, limit: int | None) -> tuple[Any, ...]:
    from clinical.group_folds import fold_items

    return fold_items(name)[:limit] if limit else fold_items(name)


def _played(cfg: GroupConfig, stage: str, folder: Path, threads: int | None,
            limit: int | None) -> tuple[Any, dict[str, Any]]:
    """(tokenizer backend, {fold: Played}) for the ``debate`` and ``cal`` folds."""
    from runtime.factory import load_gguf
    from runtime.registry import resolve
    from sag.debate.runners import batch_width, build_runners
    from sag.training.view_debate_data import play_fold

    tok = load_gguf(resolve(cfg.backbones[0]), n_ctx=4096, n_threads=1, kv_cache_mb=0)
    runners: dict[str, Any] | None = None
    out = {}
    for fold in ("debate", "cal"):
        cache = folder / f"played-{stage}-{fold}{f'-{limit}' if limit else ''}.json"
        if runners is None and not cache.is_file():
            runners = build_runners(cfg.models(), n_threads=threads, width=batch_width(cfg))
        out[fold] = play_fold(cfg, _fold(fold, limit), runners or {}, tok.prompt_tokens, stage, cache)
    return tok, out


def _measure_team(store: Any, run_id: str, step: int, model: Any, scorer: Any, cal: dict[str, Any]) -> dict[str, str]:
    from sag.training.view_critic import plurality_letters
    from training.base_model import use_adapter
    from training.letter_task import greedy_answers

    said, probs = {}, []
    answers = []
    for name, items in cal.items():
        use_adapter(model, name)
        got = greedy_answers(model, items, scorer=scorer)
        letter, share = got.top_letter
        store.add_eval(run_id, step, f"cal:{name}", got.n_items, got.n_correct, len(items.option_ids), letter, share)
        names = items.option_names
        store.add_answers(run_id, step, f"cal:{name}", [(i, names[a], names[r]) for i, a, r in
                                                        zip(items.ids, got.answers, got.right)])
        said[name] = f"{got.accuracy:.3f}"
        answers.append(np.array(got.answers))
        probs.append(np.eye(len(items.option_ids))[np.array(got.answers)])
    first = next(iter(cal.values()))
    vote = plurality_letters(np.stack(answers), np.stack(probs))
    n_correct = int((vote == first.right).sum())
    counts = np.bincount(vote, minlength=len(first.option_ids))
    store.add_eval(run_id, step, "cal:plurality", len(vote), n_correct, len(first.option_ids),
                   first.option_names[int(counts.argmax())], float(counts.max() / len(vote)))
    said["plurality"] = f"{n_correct / len(vote):.3f}"
    return said


@dataclass(frozen=True)
class _DebateData:
    """What the debate stage trains on and measures with, and what names its run."""

    agents: tuple[str, ...]
    items: dict[str, Any]
    cal: dict[str, Any]
    rehearsal: dict[str, Any]
    data_hash: str
    n_train: int


def _debate_data(stage: DebateStage) -> _DebateData:
    from runtime.llama_backend import file_sha256
    from sag.training.view_debate_data import played_hash, turn_items
    from sag.training.view_training import member_items

    cfg, s = stage.cfg, stage.settings
    agents = _ids(cfg, AgentRole.REASONING)
    tok, played = _played(cfg, "debate", stage.out / f"views-{cfg.digest()}", s.threads, stage.fold_limit)
    debate_items, cal_items = _fold("debate", stage.fold_limit), _fold("cal", stage.fold_limit)
    members = _fold("members", stage.fold_limit)
    sources = {a: file_sha256(adapter_of(cfg, a)) for a in agents}
    return _DebateData(
        agents,
        {a: turn_items(played["debate"], a, debate_items, tok.option_token, rewards=s.rewards) for a in agents},
        {a: turn_items(played["cal"], a, cal_items, tok.option_token, rewards=s.rewards) for a in agents},
        {a: member_items(tok, cfg, a, members, max_tokens=s.max_prompt_tokens, rewards=s.rewards) for a in agents},
        played_hash(played["debate"], debate_items) + json.dumps(sources, sort_keys=True), len(debate_items))


def _team_model(stage: DebateStage, path: Path, agents: tuple[str, ...]) -> tuple[Any, Any, Any]:
    """(model with one adapter per member, loaded from its stage-1 file; its scorer; optimiser)."""
    import torch

    from training.base_model import adapter_parameters, add_lora, frozen_layers, load_base
    from training.gguf_lora_read import load_lora_into
    from training.scorer import OptionScorer

    model = add_lora(load_base(path), stage.settings.lora, agents)
    for a in agents:
        load_lora_into(model, a, adapter_of(stage.cfg, a), path)
    scorer = OptionScorer(model, frozen_layers=frozen_layers(model, stage.settings.lora))
    return model, scorer, torch.optim.AdamW(adapter_parameters(model), lr=stage.settings.learning_rate)


def _export_team(stage: DebateStage, model: Any, path: Path, run_dir: Path, agents: tuple[str, ...]) -> Path:
    """Each member's adapter as a GGUF file and the group file naming them."""
    from training.base_model import use_adapter
    from training.gguf_lora import export_lora_gguf

    keys = dict(stage.cfg.agent_models)
    for a in agents:
        use_adapter(model, a)
        adapter = export_lora_gguf(model, path, run_dir / f"adapter-{a}.gguf", alpha=stage.settings.lora.alpha)
        keys[a] = f"{stage.base_model}{_FILE_KEY}{adapter}"
    return write_group_file(stage.cfg.with_changes(agent_models=keys), run_dir / "group-debate.json")


def train_debate(store: TrainingStore | TrainingRecorder, stage: DebateStage, *,
                 progress: Callable[[int, int, StepRow | None], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> StageResult:
    """Train (or resume) the debate stage; see the module docstring."""
    import torch

    from runtime.llama_backend import file_sha256
    from runtime.registry import resolve
    from sag.training.view_critic import PluralityCritic
    from training.base_model import set_threads
    from training.checkpoint import load_checkpoint, restore, save_checkpoint
    from training.loop import run_loop
    from training.run import check_layers
    from training.team_letters import TeamStep

    s = stage.settings
    path = resolve(stage.base_model)
    check_layers(path, s.lora.layers)
    data = _debate_data(stage)
    run_id = s.digest(DEBATE_KIND, stage.base_model, file_sha256(path), data.data_hash, f"w={stage.group_weight:g}")
    run_dir = stage.out / run_id
    settings = {**s.recorded(), "group_weight": stage.group_weight, "group": stage.cfg.name}
    store.check_start(run_id, kind=DEBATE_KIND, method="ctde", base_model=stage.base_model, settings=settings,
                      data_hash=data.data_hash)
    done = _finished_stage(store, run_id, s.steps)
    if done is not None:  # finished, its group file as recorded: nothing is trained or measured again
        return done
    store.start_run(run_id, kind=DEBATE_KIND, method="ctde", base_model=stage.base_model, settings=settings,
                    data_name="ddxplus8:debate:round1", data_hash=data.data_hash, n_train=data.n_train)
    set_threads(s.threads)
    torch.manual_seed(s.seed)
    model, scorer, optimizer = _team_model(stage, path, data.agents)
    rng = np.random.default_rng(s.seed)
    start, measured = 0, {}
    found = load_checkpoint(run_dir)
    if found is not None:
        restore(found, model, optimizer)
        rng.bit_generator.state = found.state["rng"]
        start = found.step
        store.forget_after(run_id, start)
    if start == 0:
        measured.update({f"before {k}": v for k, v in _measure_team(store, run_id, 0, model, scorer, data.cal).items()})
    step = TeamStep(model, data.items, PluralityCritic(data.items[data.agents[0]].right, stage.group_weight), s,
                    optimizer, rng, scorer, data.rehearsal)
    result = run_loop(start=start, total=s.steps, step=step, record=lambda row: store.add_step(run_id, row),
                      checkpoint=lambda k: save_checkpoint(run_dir, k, model, optimizer, {"rng": rng.bit_generator.state}),
                      every=s.checkpoint_every, progress=progress, should_stop=should_stop)
    if result.stopped:
        store.finish(run_id, "stopped")
        return StageResult(run_id, result.last_step, True, None, measured)
    measured.update({f"after {k}": v for k, v in _measure_team(store, run_id, s.steps, model, scorer, data.cal).items()})
    group_file = _export_team(stage, model, path, run_dir, data.agents)
    store.finish(run_id, "finished", str(group_file), file_sha256(group_file))
    return StageResult(run_id, result.last_step, False, group_file, measured)


def _finished_stage(store: TrainingStore | TrainingRecorder, run_id: str, steps: int) -> StageResult | None:
    """A finished stage run's result as recorded (its group file, its CAL measurements)."""
    from training.run import finished_result

    done = finished_result(store, run_id, steps)
    if done is None:
        return None
    return StageResult(run_id, steps, False, done.adapter, {
        f"{when} {split.split(':', 1)[-1]}": f"{score.accuracy:.3f}"
        for when, scores in (("before", done.before), ("after", done.after)) for split, score in scores.items()})


def train_judge(store: TrainingStore | TrainingRecorder, stage: JudgeStage, *,
                progress: Callable[[int, int, StepRow | None], None] | None = None,
                should_stop: Callable[[], bool] | None = None,
                on_measure: Callable[[str, int, bool], None] | None = None) -> StageResult:
    """Train (or resume) the judge stage; see the module docstring."""
    from runtime.llama_backend import file_sha256
    from runtime.registry import resolve
    from sag.training.view_debate_data import played_hash, turn_items
    from training.run import LetterRun, check_layers, run_letter_training

    cfg, s = stage.cfg, stage.settings
    path = resolve(stage.base_model)
    check_layers(path, s.lora.layers)
    (judge,) = _ids(cfg, AgentRole.JUDGE)
    folder = stage.out / f"views-{cfg.digest()}"
    tok, played = _played(cfg, "judge", folder, s.threads, stage.fold_limit)
    debate_items, cal_items = _fold("debate", stage.fold_limit), _fold("cal", stage.fold_limit)
    items = turn_items(played["debate"], judge, debate_items, tok.option_token, rewards=s.rewards, refusable=True)
    heldout = {"cal": turn_items(played["cal"], judge, cal_items, tok.option_token, rewards=s.rewards, refusable=True)}
    run = LetterRun(JUDGE_KIND, stage.base_model, path, file_sha256(path), s, items, "ddxplus8:debate:judge",
                    played_hash(played["debate"], debate_items), heldout, stage.out)
    got = run_letter_training(store, run, progress=progress, should_stop=should_stop, on_measure=on_measure)
    measured = {f"before {k}": f"{v.accuracy:.3f}" for k, v in got.before.items()}
    measured.update({f"after {k}": f"{v.accuracy:.3f}" for k, v in got.after.items()})
    if got.stopped or got.adapter is None:
        return StageResult(got.run_id, got.steps_done, True, None, measured)
    keys = {**dict(cfg.agent_models), judge: f"{stage.base_model}{_FILE_KEY}{got.adapter}"}
    group_file = write_group_file(cfg.with_changes(agent_models=keys), stage.out / got.run_id / "group-judge.json")
    return StageResult(got.run_id, got.steps_done, False, group_file, measured)


def shipped_group(cfg: GroupConfig, names: dict[str, str], name: str) -> GroupConfig:
    """The trained group as shipped: each agent's ``+lora:file:PATH`` key rewritten to the
    registry key of the exported adapter (``names``: adapter path -> exported adapter name,
    as ``python -m training export`` named it), the group renamed ``name``."""
    keys = {}
    for agent_id, model in cfg.agent_models:
        if _FILE_KEY in model:
            base, path = model.split(_FILE_KEY, 1)
            if path not in names:
                raise ConfigError("group", f"agent {agent_id}'s adapter {path} is not among the exported ones "
                                           f"({', '.join(sorted(names)) or 'none'})")
            model = f"{base}+lora:{names[path]}"
        keys[agent_id] = model
    return cfg.with_changes(name=name, agent_models=keys)


def exported_names(cfg: GroupConfig, adapters: Path) -> dict[str, str]:
    """Each adapter file ``cfg``'s agents run with -> the name of the adapter in ``adapters``
    with the same sha256 (what ``python -m training export`` copied it to)."""
    from runtime.llama_backend import file_sha256

    by_sha = {file_sha256(p): p.stem for p in sorted(Path(adapters).glob("*.gguf"))}
    out = {}
    for agent_id, model in cfg.agent_models:
        if _FILE_KEY not in model:
            continue
        path = model.split(_FILE_KEY, 1)[1]
        if not Path(path).is_file():
            raise ConfigError("group", f"agent {agent_id}'s adapter {path} is missing")
        sha = file_sha256(Path(path))
        if sha not in by_sha:
            raise ConfigError("group", f"agent {agent_id}'s adapter {path} has not been exported into {adapters} "
                                       "(python -m training export --run RUN --name NAME)")
        out[path] = by_sha[sha]
    return out
