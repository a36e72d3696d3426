"""Run an evaluation suite for one group: every part as a resumable SAG run.

Each (group, part) is one run of :func:`sag.runs.run.run_items` whose id hashes the part's
items and the group config as the part changes it, so the same command resumes where
it stopped, answers finished parts from the store and every repeated turn from the call
log.  Models and retrieval indexes are built once per group, and only when some part
still has items to answer.  After each part of a segment that loaded models, the
process's peak resident memory is stored with the weights' sizes (run one group per process to read a
group's own peak: ``python -m sag eval`` does).

``only`` restricts a segment to some parts (``consistency``, ``accuracy/medqa``: a part key
or a prefix of it ending at a ``/``).  The evaluation is the same one (same id, same runs),
so one group can be run in two processes or on two machines, each on its own parts, and
the store files joined with ``python -m sag merge``.

The D-CEM group calibrates with its own decoding on the calibration items of the part's
benchmark, whatever the part changes (the consistency runs' temperature, top-p and seed):
the runs vary the debate, not the fitted mediator, as a deployed group is calibrated once
and then run many times.  So every part of one benchmark has the same calibration, played
once and answered from the call log after that.
"""
from __future__ import annotations

import functools
import hashlib
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from clinical.questions import QuestionItem
from common.errors import ConfigError
from common.resume import check_resume
from common.work import Executor, InProcess, WorkSummary
from runtime.turns import TurnRunner
from sag.group.config import GroupConfig
from sag.debate.hybrid import Searcher
from sag.evaluation.subsets import Subsets, items_by_id, load_subsets
from sag.evaluation.suite import Part, SuiteSpec, build_parts
from sag.runs.run import (Progress, RetrieverFactory, RunnerFactory, corpora_of, default_retrievers, default_runners,
                     run_items)
from sag.store.eval_tables import part_settings, record_cost, record_part
from sag.store.tables import SagStore

__all__ = ["GroupEvalSummary", "run_group_eval", "part_config", "part_run_id", "model_weights", "calibration_items",
           "select_parts", "check_group_settings"]

_RESUME_HINT = ("repeat the command that started it to resume it, or run the changed group under a name of its own "
                "(a group file's \"name\") or in another store (--db)")


@dataclass(frozen=True)
class GroupEvalSummary(WorkSummary):
    """A group's evaluation: the :class:`common.work.WorkSummary` of the items of all its
    parts (run id ``<eval id>/<group>``; ``failed``: the items that got no answer this time),
    with the group's name, its parts, the process's peak memory and ``skipped_parts``: the
    parts the group cannot answer (D-CEM on items of varying option counts)."""

    group: str = ""
    parts: int = 0
    peak_rss_mb: float | None = None
    skipped_parts: tuple[str, ...] = ()


def part_config(cfg: GroupConfig, part: Part) -> GroupConfig:
    return cfg.with_changes(**dict(part.changes)) if part.changes else cfg


def part_run_id(cfg: GroupConfig, part: Part) -> str:
    digest = hashlib.sha256(f"{part.digest()}|{cfg.digest()}".encode()).hexdigest()[:10]
    return f"eval-{part.key.replace('/', '.')}-{cfg.name}-{digest}"


def check_group_settings(store: SagStore, spec: SuiteSpec, cfgs: Sequence[GroupConfig],
                         subsets: Subsets | None = None) -> None:
    """Refuse (:class:`common.resume.ResumeRefused`) a group whose name the evaluation already
    holds with other settings (suite spec or group config, part by part), so one group of a
    report is never answered by two configs; called before anything is written."""
    parts: Sequence[Part] | None = None
    for cfg in cfgs:
        if part_settings(store, spec.eval_id, cfg.name):
            parts = parts if parts is not None else build_parts(spec, subsets or load_subsets())
            _check_parts(store, spec, cfg, parts)


def _check_parts(store: SagStore, spec: SuiteSpec, cfg: GroupConfig, parts: Sequence[Part]) -> None:
    stored = part_settings(store, spec.eval_id, cfg.name)
    for part in parts:
        if part.key in stored:
            check_resume(f"group {cfg.name} of evaluation {spec.eval_id} (part {part.key})", stored[part.key],
                         {"spec": spec.to_dict(), "config": part_config(cfg, part).to_dict()}, hint=_RESUME_HINT)


def calibration_items(source: str, subsets: Subsets, n: int) -> tuple[QuestionItem, ...]:
    """The first ``n`` calibration items of a subset (``safety`` or a benchmark)."""
    ids = subsets.safety("calibration") if source == "safety" else subsets.calibration_ids(source)
    if n > len(ids):
        raise ConfigError("n_cal", f"the {source} subset has {len(ids)} calibration items; the group asks for {n}")
    by_id = items_by_id(source)
    return tuple(by_id[i] for i in ids[:n])


def _cannot_answer(cfg: GroupConfig, part: Part, subsets: Subsets) -> bool:
    """D-CEM needs one label set: a part (or its calibration items) mixing option counts
    (MMLU-Pro items have 3 to 10 options) is skipped for the dcem method."""
    if cfg.method != "dcem":
        return False
    cal = calibration_items(part.calibration_source, subsets, cfg.n_cal)
    return len({len(it.options) for it in part.items + cal}) > 1


def _within(key: str, prefix: str) -> bool:
    prefix = prefix.strip().strip("/")
    return key == prefix or key.startswith(prefix + "/")


def select_parts(parts: Sequence[Part], only: Sequence[str]) -> tuple[Part, ...]:
    """The parts whose key is one of ``only`` or lies under one (all parts when ``only`` is
    empty); a name that matches no part is an error that lists the suite's part groups."""
    if not only:
        return tuple(parts)
    unknown = [o for o in only if not any(_within(p.key, o) for p in parts)]
    if unknown:
        groups = sorted({"/".join(p.key.split("/")[:2]) for p in parts})
        raise ConfigError("parts", f"no part of this suite is named {', '.join(map(repr, unknown))}; give a part key "
                          f"or the start of one, e.g. {', '.join(groups[:6])}{' ...' if len(groups) > 6 else ''}")
    return tuple(p for p in parts if any(_within(p.key, o) for o in only))


def _plan(parts: Sequence[Part], skipped: Sequence[str]) -> dict[str, int]:
    """What the whole group will answer, kept with every part: a report on a store whose
    later parts have not begun yet tells that the group is unfinished, and by how much."""
    return {"group_parts": len(parts) - len(skipped),
            "group_items": sum(len(p.items) for p in parts if p.key not in skipped)}


def model_weights(cfg: GroupConfig) -> dict[str, Any]:
    """Size (MB) and parameters of each local model of the group, and agents per model;
    models behind an HTTP server have neither (``null``)."""
    from runtime.registry import resolve

    models: dict[str, Any] = {}
    for key in cfg.models():
        if key.startswith("openai:"):
            models[key] = None
            continue
        path = resolve(key)
        st = path.stat()
        models[key] = {"mb": st.st_size / 2**20, "parameters": _parameters(str(path), st.st_size, st.st_mtime_ns)}
    agents: dict[str, int] = {}
    for agent in cfg.agents():
        agents[agent.model] = agents.get(agent.model, 0) + 1
    return {"models": models, "agents": agents}


@functools.lru_cache(maxsize=32)
def _parameters(path: str, size: int, mtime_ns: int) -> int:
    """A GGUF file's parameter count, read once per process while its size and time hold (the
    header of a model with a large vocabulary takes a fraction of a second to walk)."""
    from runtime.gguf_info import read_gguf_header

    return read_gguf_header(Path(path)).parameter_count


class _Once:
    """A factory called at most once (the group's models, its retrieval indexes)."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        self.make, self.value, self.built = make, None, False

    def __call__(self, arg: Any) -> Any:
        if not self.built:
            self.value, self.built = self.make(arg), True
        return self.value


def _sources(cfg: GroupConfig, runners: Any, retrievers: Any, remote: bool) -> tuple[_Once, Any, Any]:
    """The group's models and indexes, built once for all parts (in process); a remote worker
    builds them once itself and keeps them (:mod:`sag.runs.item_job`), so it gets the recipes."""
    models = _Once(runners if callable(runners) else (lambda _c: runners) if runners is not None else default_runners)
    indexes = _Once((lambda _c: retrievers) if isinstance(retrievers, Mapping)
                    else (lambda _c: (retrievers or default_retrievers)(corpora_of(cfg))))
    if remote:
        return models, runners, retrievers
    return models, models, (lambda _names: indexes(None))


def _record(store: SagStore, spec: SuiteSpec, cfg: GroupConfig, part: Part, pcfg: GroupConfig, *,
            extra: dict[str, Any], position: int, models: _Once | None) -> None:
    """Record ``part`` of the evaluation; before that, when the part has work and the
    group's models (in this process) are not loaded yet, load them: a model that cannot
    load stops here, before anything of the part is written."""
    run_id = part_run_id(pcfg, part)
    if models is not None and not models.built and len(store.done_items(run_id)) < len(part.items):
        models(pcfg)
    record_part(store, eval_id=spec.eval_id, group=cfg.name, part=part.key, metric=part.metric, run_id=run_id,
                spec=spec.to_dict(), config=pcfg.to_dict(), extra=extra, position=position)


def _complete(store: SagStore, cfg: GroupConfig, parts: Sequence[Part]) -> bool:
    return all(len(store.done_items(part_run_id(part_config(cfg, p), p))) == len(p.items) for p in parts)


def _record_peak(store: SagStore, spec: SuiteSpec, cfg: GroupConfig) -> float:
    """Store this process's peak resident memory (MB) with the group's weights; return it."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    record_cost(store, eval_id=spec.eval_id, group=cfg.name, peak_rss_mb=peak, weights=model_weights(cfg))
    return peak


def run_group_eval(store: SagStore, spec: SuiteSpec, cfg: GroupConfig, *, subsets: Subsets | None = None,
                   runners: RunnerFactory | Mapping[str, TurnRunner] | None = None,
                   retrievers: RetrieverFactory | Mapping[str, Searcher] | None = None,
                   progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
                   measure_memory: bool = True, only: Sequence[str] = (),
                   executor: Executor | None = None) -> GroupEvalSummary:
    """Run (or resume) every part of ``spec`` for ``cfg`` (or the parts ``only`` names);
    see the module docstring.  executor : where the items run (this process by default; on
    Ray the workers keep the group's models loaded from one part to the next, and the
    driver's peak memory, which holds no model, is not recorded)."""
    start = time.perf_counter()
    subsets = subsets or load_subsets()
    parts = build_parts(spec, subsets)
    _check_parts(store, spec, cfg, parts)  # a changed group under a stored name: refused, nothing written
    chosen = {p.key for p in select_parts(parts, only)}
    total = sum(len(p.items) for p in parts if p.key in chosen)
    remote = executor is not None and not isinstance(executor, InProcess)
    measure_memory = measure_memory and not remote
    models, part_runners, part_retrievers = _sources(cfg, runners, retrievers, remote)
    done_before, ran = 0, []  # items before the part under way; each part's WorkSummary
    skipped = [p.key for p in parts if _cannot_answer(cfg, p, subsets)]
    plan = _plan(parts, skipped)
    for position, part in enumerate(parts):
        if cancel is not None and cancel():
            break
        if part.key not in chosen:
            continue
        if part.key in skipped:
            done_before += len(part.items)
            continue
        cal = calibration_items(part.calibration_source, subsets, cfg.n_cal) if cfg.method == "dcem" else ()
        pcfg = part_config(cfg, part)
        run_id = part_run_id(pcfg, part)
        _record(store, spec, cfg, part, pcfg, extra={"pointed": dict(part.pointed), **plan}, position=position,
                models=None if remote else models)
        offset = done_before

        def tick(done: int, n: int, label: str, offset: int = offset, key: str = part.key) -> None:
            if progress is not None and label != "calibration":
                progress(offset + done, total, f"{key} {label}")

        summary = run_items(store, run_id, benchmark=f"eval:{part.key}", cfg=pcfg, seed=0, evaluation=part.items,
                            calibration=cal, calibration_cfg=cfg, runners=part_runners,
                            retrievers=part_retrievers, progress=tick, cancel=cancel, executor=executor)
        done_before += len(part.items)
        if models.built and measure_memory:  # after every part, so a stopped segment keeps its measurement
            _record_peak(store, spec, cfg)
        ran.append(summary)
        if summary.stopped:  # the model fails item after item: the other parts would fail the same way
            break
        if progress is not None:
            progress(done_before, total, part.key)
    peak = _record_peak(store, spec, cfg) if models.built and measure_memory else None
    complete = _complete(store, cfg, [p for p in parts if p.key not in skipped and p.key in chosen])
    return GroupEvalSummary(f"{spec.eval_id}/{cfg.name}", any(s.resumed for s in ran), sum(s.computed for s in ran),
                            sum(s.skipped for s in ran), total, complete, tuple(f for s in ran for f in s.failed), None,
                            time.perf_counter() - start, sum(s.model_calls for s in ran),
                            sum(s.cached_calls for s in ran), group=cfg.name, parts=len(chosen), peak_rss_mb=peak,
                            skipped_parts=tuple(skipped))
