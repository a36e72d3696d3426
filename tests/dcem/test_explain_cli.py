"""The explain command: output contract, episode semantics and bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dcem.analysis.explain import explain
from dcem.cli import main

ROOT = Path(__file__).resolve().parents[2]

EPISODE = {
    "labels": ["MI", "GERD", "URTI"],
    "confusion": [[[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]],
                  [[0.6, 0.3, 0.1], [0.1, 0.8, 0.1], [0.1, 0.2, 0.7]]],
    "prior": "uniform",
    "loss": [[0, 1, 1], [5, 0, 1], [5, 1, 0]],
    "reports": [["GERD", "MI"], ["GERD", "GERD"], ["GERD", "GERD"], ["MI", "MI"], ["MI", "MI"]],
    "params": {"t_max": 6},
}

ROUND_KEYS = {"round", "posteriors", "reliability", "weights", "pooled", "decision", "runner_up",
              "margin", "agent_risk", "dangerous_miss", "energy", "energy_terms", "descent", "action",
              "steer", "certified", "budget"}


def run_cli(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dcem", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_output_has_every_documented_field() -> None:
    out = explain(EPISODE)
    assert set(out) == {"rounds", "outcome"}
    assert set(out["outcome"]) == {"action", "decision", "rounds"}
    for r in out["rounds"]:
        assert set(r) == ROUND_KEYS
        assert set(r["energy_terms"]) == {"disagreement", "risk", "margin"}
        assert r["energy"] == pytest.approx(sum(r["energy_terms"].values()))
        assert len(r["posteriors"]) == 2 and all(len(p) == 3 for p in r["posteriors"])
        assert sum(r["pooled"]) == pytest.approx(1.0)
        assert sum(r["weights"]) == pytest.approx(1.0)
        assert r["decision"] in EPISODE["labels"] and r["runner_up"] != r["decision"]
        assert (r["steer"] is None) == (r["action"] != "DIFFERENTIAL_STEER")
    assert [r["round"] for r in out["rounds"]] == list(range(1, len(out["rounds"]) + 1))


def test_first_rounds_are_steers_then_the_episode_ends_at_its_first_terminal_action() -> None:
    out = explain(EPISODE)
    rounds = out["rounds"]
    assert rounds[0]["action"] == "DIFFERENTIAL_STEER"
    assert rounds[0]["steer"] == {"agent": 0, "current": "GERD", "alternative": "MI"}
    assert rounds[0]["descent"] is None and rounds[1]["descent"] is None  # t <= W = 2
    assert rounds[2]["descent"] == pytest.approx((rounds[0]["energy"] - rounds[2]["energy"]) / 2)
    terminal = [r for r in rounds if r["action"] in ("STOP_AND_DECIDE", "STOP_AND_ESCALATE")]
    assert len(terminal) == 1 and terminal[0] is rounds[-1]
    assert out["outcome"]["action"] == rounds[-1]["action"]
    assert out["outcome"]["rounds"] == len(rounds) < len(EPISODE["reports"]) + 1


def test_pending_when_reports_run_out() -> None:
    doc = dict(EPISODE, reports=[["GERD", "MI"]])
    out = explain(doc)
    assert out["outcome"] == {"action": "PENDING", "decision": out["rounds"][0]["decision"], "rounds": 1}


def test_budget_round_becomes_terminal() -> None:
    doc = dict(EPISODE, reports=[["GERD", "URTI"]] * 3, params={"t_max": 2, "s_asym": 99})
    out = explain(doc)
    last = out["rounds"][-1]
    assert last["round"] == 2 and last["budget"] is True and last["certified"] is False
    assert out["outcome"]["action"] in ("STOP_AND_DECIDE", "STOP_AND_ESCALATE")


def test_missing_params_take_defaults_and_params_change_the_result() -> None:
    strict = explain(dict(EPISODE, params={"s_asym": 100.0}))
    assert all(r["action"] != "DIFFERENTIAL_STEER" for r in strict["rounds"])


def test_cli_reads_file_and_stdin(tmp_path: Path) -> None:
    path = tmp_path / "ep.json"
    path.write_text(json.dumps(EPISODE))
    from_file = run_cli(["explain", str(path)])
    from_stdin = run_cli(["explain", "-"], stdin=json.dumps(EPISODE))
    assert from_file.returncode == 0 and from_stdin.returncode == 0
    assert json.loads(from_file.stdout) == json.loads(from_stdin.stdout) == json.loads(json.dumps(explain(EPISODE)))


@pytest.mark.parametrize("doc, fragment", [
    ({**EPISODE, "reports": [["GERD", "Flu"]]}, "unknown label 'Flu'"),
    ({**EPISODE, "reports": [["GERD"]]}, "one label for each of the 2 agents"),
    ({**EPISODE, "loss": [[0, -1, 1], [5, 0, 1], [5, 1, 0]]}, "loss"),
    ({**EPISODE, "loss": [[0, 1], [1, 0]]}, "loss"),
    ({**EPISODE, "confusion": [[[0.8, 0.1, 0.2], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]]] * 2}, "sums to"),
    ({**EPISODE, "confusion": [[[1.0, 0.0, 0.0], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]]] * 2}, "strictly positive"),
    ({**EPISODE, "params": {"eps_safe": 2.0, "eps_low": 1.0}}, "eps_safe"),
    ({**EPISODE, "params": {"bogus": 1}}, "bogus"),
    ({**EPISODE, "prior": [0.5, 0.5]}, "prior"),
    ({**EPISODE, "prior": "empirical"}, "prior"),
    ({k: v for k, v in EPISODE.items() if k != "loss"}, "loss: is required"),
    ([1, 2, 3], "JSON object"),
])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, doc: object, fragment: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_invalid_json_and_missing_file_through_the_real_process(tmp_path: Path) -> None:
    bad = run_cli(["explain", "-"], stdin="{not json")
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr and "Traceback" not in bad.stderr
    missing = run_cli(["explain", str(tmp_path / "nope.json")])
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert missing.stderr.count("\n") == 1
