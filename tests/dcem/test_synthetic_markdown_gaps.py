"""``python -m dcem report --from-export DIR --markdown`` over synthetic runs that do not
hold every scenario or method: the tables show what the export holds, a sentence names
what it lacks, a block that means nothing without a method says why it is left out --
exit 0, no traceback, no number the export does not give.

Two small real runs, exported: the specification's world over S1 and S3b (two seeds) and
the sharpened world over S1 (one seed), both with the compliance ablation."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dcem.analysis.synthetic_markdown import render_synthetic_markdown
from dcem.cli import main
from dcem.store.database import Store
from dcem.store.run_export import RunExport, load_run_export

RUN = ["run", "synthetic", "--n-train", "2000", "--n-eval", "20", "--quiet"]


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("partial")
    db = str(root / "p.duckdb")
    assert main([*RUN, "--scenarios", "S1,S3b", "--seeds", "2", "--db", db]) == 0
    assert main([*RUN, "--scenarios", "S1", "--seeds", "1", "--sharpness", "3", "--db", db]) == 0
    with Store(db, read_only=True) as store:
        runs = store.con.execute("SELECT run_id FROM runs ORDER BY created_at").fetchall()
    out = root / "export"
    args = [a for (r,) in runs for a in ("--run", r)]
    assert main(["export", "--db", db, *args, "--out", str(out), "--command", "python -m dcem run ..."]) == 0
    return out


def _markdown(directory: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["report", "--from-export", str(directory), "--markdown"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def _block(text: str, title: str) -> list[str]:
    """The body rows of the table under the first line starting with ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title)) + 4  # title, blank, head, rule
    end = lines.index("", start)
    return lines[start:end]


def _runs(export: RunExport) -> tuple[str, str]:
    two = [r for r in export.run_ids if export.run(r)["spec"]["scenarios"] == ["S1", "S3b"]]
    one = [r for r in export.run_ids if export.run(r)["spec"]["scenarios"] == ["S1"]]
    return two[0], one[0]


def _only(export: RunExport, **frames: object) -> RunExport:
    return dataclasses.replace(export, **frames)  # type: ignore[arg-type]


def test_the_markdown_shows_the_scenarios_held_and_names_the_others(partial: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    text = _markdown(partial, capsys)
    assert "The export holds no cells of S2 and S3a for this run: the tables below show S1 and S3b only." in text
    assert "The export holds no cells of S2, S3a and S3b for this run: the tables below show S1 only." in text
    spec_world, sharp_world = text.split("#### Variant: sharpened agents")[0], text.split("#### Variant:")[1]
    accuracy = _block(spec_world, "Pooled accuracy")
    assert [row.split(" | ")[0] for row in accuracy] == ["| S1", "| S3b"]
    assert [row.split(" | ")[0] for row in _block(sharp_world, "Pooled accuracy")] == ["| S1"]
    for title in ("Expected diagnostic cost", "System risk", "Risk with escalation at 0.5", "High-risk miss",
                  "Escalation ablation"):
        assert len(_block(spec_world, title)) == 2 and len(_block(sharp_world, title)) == 1, title
    assert "| S2 |" not in text and "| S3a |" not in text and "nan" not in text and "n/a" not in text
    actions = next(line for line in spec_world.splitlines() if line.startswith("D-CEM's terminal actions"))
    assert actions.count(" S1 ") == 4 and actions.count(", S3b ") == 4 and "S2" not in actions
    assert actions.endswith("(Free discussion: 22).")
    table5 = _block(spec_world, "Table 5, read at round T")
    assert [row.split(" | ")[:2] for row in table5] == [["| S1", "25%"], ["| S1", "100%"],
                                                             ["| S3b", "25%"], ["| S3b", "100%"]]


def test_the_cells_printed_are_the_exported_means(partial: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _markdown(partial, capsys)
    export = load_run_export(partial)
    two, _ = _runs(export)
    m = export.metrics
    for scen in ("S1", "S3b"):
        values = m[(m["run_id"] == two) & (m["scenario"] == scen) & (m["method"] == "dcem")
                   & (m["metric"] == "accuracy")]["value"]
        assert len(values) == 2
        row = next(r for r in _block(text, "Pooled accuracy") if r.startswith(f"| {scen} |"))
        assert row.split(" | ")[4] == f"{values.mean():.2f} ± {values.std(ddof=0):.2f}"


def test_worlds_whose_readings_cover_different_scenarios_are_not_ranked(partial: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    text = _markdown(partial, capsys)
    side = text.split("#### The worlds side by side")[1]
    rows = {row.split(" | ")[0]: row for row in side.splitlines() if row.startswith("| ")}
    sharp = rows["| sharpened agents, p ∝ exp(3 s)"]
    assert sharp.split(" | ")[1:4] == ["—", "—", "— / —"]
    assert " / — / — / — | " in sharp
    spec = rows["| specification (sampled, exp(s))"]
    assert spec.split(" | ")[1] == "—" and spec.split(" | ")[2].count(" vs ") == 1
    assert "— marks a cell the export cannot fill" in side and "nan" not in side
    assert "No world is named closest to Table 5: the worlds' readings cover different scenarios." in side
    assert "Closest to Table 5:" not in side


def test_a_run_without_the_ablation_says_table5_is_left_out(partial: Path) -> None:
    export = load_run_export(partial)
    two, _ = _runs(export)
    text = render_synthetic_markdown(_only(export, ablation=export.ablation[export.ablation["run_id"] == two]))
    assert text.count("Table 5 is left out: the export holds no compliance-ablation readings for this run") == 1
    assert text.count("Table 5, read at round T") == 1
    assert "No world is named closest to Table 5: only specification (sampled, exp(s)) has Table 5 readings." in text
    s1_only = export.ablation[(export.ablation["run_id"] == two) & (export.ablation["scenario"] == "S1")]
    text = render_synthetic_markdown(_only(export, ablation=s1_only))
    assert "The export holds no Table 5 readings of S3b for this run: its rows are left out." in text


def test_a_missing_method_leaves_its_column_out_and_the_blocks_it_needs(partial: Path) -> None:
    export = load_run_export(partial)
    text = render_synthetic_markdown(_only(export, metrics=export.metrics[export.metrics["method"] != "dcem_noesc"]))
    assert text.count("The export holds no results of D-CEM w/o escalation for this run: the tables below leave "
                      "its column out.") == 2
    assert "| scen. | Single best | Free discussion | Fixed log pool | D-CEM |\n|---|---|---|---|---|\n" in text
    assert "D-CEM w/o escalation |" not in text
    assert text.count("Left out: the ablation compares D-CEM with and without escalation, and the export holds "
                      "no results of D-CEM w/o escalation for this run.") == 2
    assert "D-CEM's terminal actions: certified rate S1" in text
    no_mediator = export.metrics[~export.metrics["method"].isin(["dcem", "dcem_noesc", "free"])]
    text = render_synthetic_markdown(_only(export, metrics=no_mediator))
    assert "results of Free discussion, D-CEM and D-CEM w/o escalation for this run: the tables below leave " \
           "their columns out." in text
    assert text.count("D-CEM's terminal actions are left out: the export holds no D-CEM results for this run.") == 2
    assert "no results of D-CEM and D-CEM w/o escalation for this run." in text and "nan" not in text


def test_a_run_with_no_results_says_there_is_nothing_to_tabulate(partial: Path) -> None:
    export = load_run_export(partial)
    two, _ = _runs(export)
    text = render_synthetic_markdown(_only(export, metrics=export.metrics[export.metrics["run_id"] == two],
                                           ablation=export.ablation[export.ablation["run_id"] == two]))
    sharp = text.split("#### Variant:")[1].split("#### The worlds")[0]
    assert "The export holds no results of this run (it stored no cell): there is nothing to tabulate." in sharp
    assert "| scen." not in sharp
    assert "| sharpened agents, p ∝ exp(3 s) | — | — | — / — | — / — / — / — | — (0) |" in text
