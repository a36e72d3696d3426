"""The flags of ``python -m sag run``, ``python -m dcem_clinical run`` and ``python -m dcem
run synthetic`` / ``ceilings``, each with the oracle of the value it must accept, and the
commands run in-process with every expensive step (the store, the experiment, model
loading) replaced by stand-ins that record what reached them.

An oracle returns the value the command must pass on, or None when the text must be
refused before anything is opened, stored or loaded.
"""
from __future__ import annotations

import contextlib
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")

Oracle = Callable[[str], Any]


def strict_int(low: int, high: int) -> Oracle:
    """Whole numbers written with ASCII digits, in [low, high]."""
    def read(text: str) -> int | None:
        value = int(text.strip()) if _WHOLE.fullmatch(text.strip()) else None
        return value if value is not None and low <= value <= high else None
    return read


def python_int(low: int, high: int) -> Oracle:
    """What ``int(text)`` reads (the flag's library check then applies [low, high])."""
    def read(text: str) -> int | None:
        try:
            value = int(text)
        except ValueError:
            return None
        return value if low <= value <= high else None
    return read


def finite_float(low: float, high: float, *, above_low: bool = False) -> Oracle:
    """What ``float(text)`` reads, finite and in [low, high] (or (low, high])."""
    def read(text: str) -> float | None:
        try:
            value = float(text)
        except ValueError:
            return None
        ok = math.isfinite(value) and low <= value <= high and not (above_low and value == low)
        return value if ok else None
    return read


@dataclass(frozen=True)
class Command:
    """One command: its fixed arguments, flags with their oracles and where each parsed
    value must arrive (read from the record of the stand-ins)."""

    cli: str
    fixed: tuple[str, ...]
    flags: dict[str, Oracle]
    arrived: Callable[[dict[str, Any], str], Any]


ITEMS = 25  # more than the default --items (20)


def write_items(folder: Path) -> Path:
    path = folder / "items.jsonl"
    rows = [f'{{"id": "q{i}", "question": "Which one {i}?", "options": {{"A": "x", "B": "y"}}, "answer": "A"}}'
            for i in range(ITEMS)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _sag_arrived(record: dict[str, Any], flag: str) -> Any:
    spec, loads = record["spec"], record["loads"]
    return {"--threads": loads["n_threads"], "--n-gpu-layers": loads["n_gpu_layers"], "--items": spec.n_items,
            "--seed": spec.seed, "--t-max": spec.cfg.t_max, "--rationale-tokens": spec.cfg.rationale_tokens,
            "--top-k": spec.cfg.top_k, "--temperature": spec.cfg.temperature}[flag]


def _clinical_arrived(record: dict[str, Any], flag: str) -> Any:
    spec, kw = record["spec"], record["kwargs"]
    return {"--seeds": len(spec.seeds), "--seed-start": spec.seeds[0], "--cases": spec.n_test,
            "--cal-cases": spec.n_cal, "--few-shot": spec.few_shot_k, "--temperature": spec.temperature,
            "--t-max": spec.base_config.t_max, "--free-rounds": spec.free_rounds, "--n-ctx": spec.n_ctx,
            "--n-gpu-layers": kw["n_gpu_layers"], "--threads": kw["n_threads"]}[flag]


def _synthetic_arrived(record: dict[str, Any], flag: str) -> Any:
    if "ceilings" in record:
        return {"--n": record["ceilings"]["n"], "--seed": record["ceilings"]["seed"]}[flag]
    spec = record["spec"]
    return {"--seeds": len(spec.seeds), "--seed-start": spec.seeds[0], "--xi": spec.xi, "--t-max": spec.t_max,
            "--free-rounds": spec.free_rounds, "--n-train": spec.n_train, "--n-eval": spec.n_eval,
            "--sharpness": spec.sharpness, "--kappa": spec.kappa}[flag]


SAG_RUN = Command("sag", ("run", "--group", "single", "-q"), {
    "--threads": strict_int(1, 1024), "--n-gpu-layers": strict_int(-1, 1024), "--items": strict_int(1, ITEMS),
    "--seed": strict_int(0, 2**32 - 1), "--t-max": python_int(1, 10), "--rationale-tokens": python_int(1, 512),
    "--top-k": python_int(1, 10), "--temperature": finite_float(0.0, 5.0)}, _sag_arrived)
CLINICAL_RUN = Command("dcem_clinical", ("run", "--quiet"), {
    "--seeds": strict_int(1, 10_000), "--seed-start": strict_int(0, 2**31 - 1), "--cases": strict_int(1, 1_000_000),
    "--cal-cases": strict_int(8, 1_000_000),  # DDXPlus-8: one CAL case of each class at least "--few-shot": strict_int(0, 16), "--temperature": finite_float(0.0, 2.0),
    "--t-max": strict_int(1, 100_000), "--free-rounds": strict_int(1, 100_000), "--n-ctx": strict_int(256, 131_072),
    "--n-gpu-layers": strict_int(-1, 1024), "--threads": strict_int(1, 1024)}, _clinical_arrived)
SYNTHETIC_RUN = Command("dcem", ("run", "synthetic", "--quiet"), {
    "--seeds": strict_int(1, 10_000), "--seed-start": strict_int(0, 2**31 - 1), "--xi": finite_float(0.0, 1.0),
    "--t-max": strict_int(1, 100_000), "--free-rounds": strict_int(1, 100_000),
    "--n-train": strict_int(10, 10_000_000), "--n-eval": strict_int(1, 10_000_000),
    "--sharpness": finite_float(0.0, 1e6, above_low=True), "--kappa": finite_float(0.0, 1e6)}, _synthetic_arrived)
CEILINGS = Command("dcem", ("ceilings",), {"--n": strict_int(1000, 10_000_000), "--seed": strict_int(0, 2**31 - 1)},
                   _synthetic_arrived)
COMMANDS = (SAG_RUN, CLINICAL_RUN, SYNTHETIC_RUN, CEILINGS)


class _Store:
    """A stand-in store: a context manager that records that it was opened."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record

    def __call__(self, *args: Any, **kwargs: Any) -> "_Store":
        self.record["store"] = True
        return self

    def __enter__(self) -> "_Store":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def install_stand_ins(monkeypatch: pytest.MonkeyPatch, record: dict[str, Any]) -> None:
    """Replace the store, the experiments and model loading of the three commands by
    recorders (``record`` is cleared by the caller before each command)."""
    import dcem.analysis.ceilings_markdown
    import dcem.store.database
    import dcem.synthetic.spec
    import dcem_clinical.run
    import sag.runs.run
    import sag.debate.runners
    import sag.store.tables

    summary = SimpleNamespace(run_id="r", resumed=False, computed=0, skipped=0, total=0,
                              model_calls=0, cached_calls=0, seconds=0.0, failed=(), stopped=None)

    def build_runners(keys: Any, **kwargs: Any) -> dict[str, Any]:
        record["loads"] = kwargs
        return {}

    def run_sag(store: Any, spec: Any, **kwargs: Any) -> Any:
        record["spec"] = spec
        kwargs["runners"](spec.cfg)  # the models of the group are loaded here
        return summary

    def run_experiment(store: Any, spec: Any, **kwargs: Any) -> Any:
        record["spec"], record["kwargs"] = spec, kwargs
        return summary

    def ceilings(*, n: int, seed: int) -> str:
        record["ceilings"] = {"n": n, "seed": seed}
        return ""

    store = _Store(record)
    monkeypatch.setattr(sag.store.tables, "SagStore", store)
    monkeypatch.setattr(dcem.store.database, "Store", store)
    monkeypatch.setattr(sag.debate.runners, "build_runners", build_runners)
    monkeypatch.setattr(sag.runs.run, "run_sag", run_sag)
    monkeypatch.setattr(dcem_clinical.run, "run_clinical", run_experiment)
    monkeypatch.setattr(dcem.synthetic.spec, "run_synthetic", run_experiment)
    monkeypatch.setattr(dcem.analysis.ceilings_markdown, "ceilings_markdown", ceilings)


def run_main(cli: str, argv: list[str]) -> tuple[int, str, str]:
    """``python -m CLI ARGV`` in-process: exit status, stdout, stderr."""
    from dcem.cli import main as dcem_main
    from dcem_clinical.cli import main as clinical_main
    from sag.cli import main as sag_main

    main = {"sag": sag_main, "dcem": dcem_main, "dcem_clinical": clinical_main}[cli]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def check_command(command: Command, values: dict[str, str], record: dict[str, Any], items: Path) -> str:
    """Run the command with ``--flag=value`` for each value; "error" (one clean line, exit 2,
    nothing opened or loaded) when an oracle refuses a value, "valid" (every value arrived
    as read) otherwise.  Anything else fails."""
    record.clear()
    argv = list(command.fixed) + [f"{flag}={text}" for flag, text in values.items()]
    if command.cli == "sag":
        argv += ["--benchmark", str(items)]
    code, out, err = run_main(command.cli, argv)
    expected = {flag: command.flags[flag](text) for flag, text in values.items()}
    if any(value is None for value in expected.values()):
        lines = err.splitlines()
        assert code == 2 and len(lines) == 1 and "error: " in lines[0] and "Traceback" not in err, (argv, code, err)
        assert not record, (argv, sorted(record))  # refused before the store, the run or a model
        return "error"
    assert code == 0 and not err.strip(), (argv, code, err)
    for flag, value in expected.items():
        got = command.arrived(record, flag)
        assert got == value and type(got) is type(value), (argv, flag, got, value)
    return "valid"
