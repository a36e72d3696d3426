"""``python -m dcem calibrate``: a calibration CSV, labelled or not, read into its
confusion matrices and prior (text or JSON); bad files and options exit 2 with one line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dcem.cli import main
from dcem.calibration.sets import parse_calibration_csv

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "examples" / "calibration_example.csv"


def _unlabelled(path: Path, n: int = 120, keep: int = 6) -> Path:
    rng = np.random.default_rng(3)
    truth = rng.choice(3, n, p=(0.5, 0.3, 0.2))
    lines = ["case_id,agent,reported_label,true_label"]
    for i in range(n):
        for a in range(3):
            report = truth[i] if rng.random() < 0.8 else (truth[i] + rng.integers(1, 3)) % 3
            lines.append(f"c{i},agent {a + 1},k{report}," + (f"k{truth[i]}" if i < keep else ""))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_unlabelled_file_prints_its_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _unlabelled(tmp_path / "panel.csv")
    assert main(["calibrate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "panel.csv: 120 cases (6 labelled), 3 agents, labels k0, k1, k2"
    assert out[1].startswith("Confusions and prior estimated without labels by Dawid-Skene")
    assert out[2].startswith("warning: 114 of 120 cases have no true label")
    assert [line.split(":")[0] for line in out[3:6]] == ["agent 1", "agent 2", "agent 3"]
    assert "estimated recall k0 " in out[3] and out[-1].startswith("prior (empirical, alpha 0.5): k0 ")
    assert main(["calibrate", str(path), "--json", "--estimator", "one-coin", "--alpha", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected, _ = parse_calibration_csv(path.read_bytes(), estimator="one-coin")
    np.testing.assert_allclose(summary["confusion"], expected.confusion(1.0), atol=1e-6)
    assert summary["estimator"] == "one-coin" and summary["n_labelled"] == 6 and summary["alpha"] == 1.0
    assert abs(sum(summary["prior"]) - 1) < 1e-5 and all(a is not None for a in summary["accuracy_on_labelled"])


def test_a_labelled_file_is_counted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(EXAMPLE), "--json", "--prior", "uniform"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected, _ = parse_calibration_csv(EXAMPLE.read_bytes())
    assert summary["estimator"] == "counts" and summary["n_cases"] == summary["n_labelled"] == 30
    assert summary["how"] == "Confusions and prior counted from the 30 labelled cases."
    np.testing.assert_allclose(summary["confusion"], expected.confusion(), atol=1e-6)
    assert summary["prior"] == pytest.approx([1 / 3] * 3, abs=1e-6)
    np.testing.assert_allclose(summary["accuracy_on_labelled"], expected.accuracy(), atol=1e-6)


@pytest.mark.parametrize("args, fragment", [
    (["--estimator", "counts"], "counting needs every case labelled: choose the estimator"),
    (["--estimator", "em"], "argument --estimator: invalid choice"),
    (["--alpha", "0"], "argument --alpha: must be a number from 0.01 to 10"),
    (["--labels", "k0,k1"], "is not one of the given labels"),
])
def test_bad_options_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                          fragment: str) -> None:
    path = _unlabelled(tmp_path / "panel.csv")
    assert _exit_code(["calibrate", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1


def _exit_code(argv: list[str]) -> int:
    """main's status, or the status of the usage error argparse exits with."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize("content, fragment", [
    (None, "cannot read"),
    (b"\xff\xfe\x00", "not UTF-8 text"),
    (b"case_id,agent,reported_label\nc1,A,a\nc1,B,b\nc1,C,a\nc2,A,a\nc2,B,a\nc2,C,b\n",
     "only 2 cases: at least 10 are needed"),
    (b"case_id,agent,reported_label\nc1,A,a\nc1,B,b\nc2,A,a\nc2,B,a\n",
     "with two agents the reports alone cannot tell which one is right"),
])
def test_bad_files_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None,
                                        fragment: str) -> None:
    path = tmp_path / "bad.csv"
    if content is None:
        path.mkdir()  # a folder, not a file
    else:
        path.write_bytes(content)
    assert _exit_code(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
