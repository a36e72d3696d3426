"""The markdown of Tables 6, 7 and 1 (ours beside the paper's), the paper's numbers file,
and the REPRODUCTION.md block cutter."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dcem_clinical.report.markdown import render_clinical_markdown
from dcem.analysis.reproduction import reproduction_block
from dcem_clinical.report.paper import TABLE_CELLS, load_paper_tables
from common.errors import InputError
from dcem.store.database import Store
from dcem.store.run_export import load_run_export, write_run_export
from tests.dcem_clinical.export_runs import COMMAND, clinical_runs

SCENARIOS = ["S1", "S2", "S3a", "S3b"]
SHA = "0123456789ab" + "c" * 52
MODELS = [{"key": "smollm2-135m", "file": "SmolLM2.gguf", "size_bytes": 98362432, "sha256": SHA},
          {"key": "fake-b", "file": None, "size_bytes": None, "sha256": None, "note": "no local model file"}]


@pytest.fixture(scope="module")
def markdown(tmp_path_factory: pytest.TempPathFactory) -> str:
    db, runs = clinical_runs()
    out = tmp_path_factory.mktemp("md") / "export"
    with Store(db) as store:
        write_run_export(store, runs, out, command=COMMAND, models=MODELS)
    export = load_run_export(out)
    return render_clinical_markdown(export.metrics, export.manifest)


def _paper(pair: list[float]) -> str:
    std = f"{pair[1]:.2f}"
    return f"{pair[0]:.2f} ± {std[1:] if std.startswith('0.') else std}"


def test_paper_numbers_file_has_every_dataset_table_method_and_scenario() -> None:
    paper = load_paper_tables()
    assert paper["seeds"] == 10 and paper["scenarios"] == SCENARIOS and "Appendix H" in paper["source"]
    assert set(paper["datasets"]) == {"ddxplus8", "medqa-tri"}
    for tables in paper["datasets"].values():
        for table, metrics in TABLE_CELLS.items():
            assert "Table" in tables[table]["source"]
            assert set(tables[table]) == {"source", *metrics}
            for metric, methods in metrics.items():
                assert set(tables[table][metric]) == set(methods)
                for method in methods:
                    cells = tables[table][metric][method]
                    assert list(cells) == SCENARIOS
                    for mean, std in cells.values():
                        high = {"system_risk": 5.0, "avg_rounds": 6.0}.get(metric, 1.0)
                        assert (1.0 if metric == "avg_rounds" else 0.0) <= mean <= high and 0.0 <= std < 0.5
    # the D-CEM numbers of Table 1 are the D-CEM row of Table 6
    for tables in paper["datasets"].values():
        for metric in ("system_risk", "harmful_consensus"):
            assert tables["table1"][metric]["dcem"] == tables["table6"][metric]["dcem"]


def test_markdown_has_command_models_and_every_paper_number(markdown: str) -> None:
    assert markdown.startswith("Command")
    assert "python -m dcem_clinical run --dataset medqa-tri" in markdown
    assert "| smollm2-135m | SmolLM2.gguf | 98,362,432 | 0123456789ab |" in markdown and SHA not in markdown
    paper = load_paper_tables()
    for key, tables in paper["datasets"].items():
        assert f"### {tables['name']} (`{key}`)" in markdown
        block = markdown.split(f"(`{key}`)", 1)[1].split("### ", 1)[0]
        for table, metrics in TABLE_CELLS.items():
            for metric, methods in metrics.items():
                for method in methods:
                    for pair in tables[table][metric][method].values():
                        assert _paper(pair) in block, (key, table, metric, method)
    assert "| S1 ours | S1 paper | S2 ours | S2 paper | S3a ours | S3a paper | S3b ours | S3b paper |" in markdown
    assert "| Single | " in markdown and "| R_L^sys, D-CEM w/o escalation | " in markdown


def test_markdown_shows_our_means_with_spread_only_over_several_seeds(markdown: str) -> None:
    db, runs = clinical_runs()
    with Store(db) as store:
        ddx, medqa = store.metrics(runs[0]), store.metrics(runs[1])
    values = ddx[(ddx["scenario"] == "S1") & (ddx["method"] == "dcem") & (ddx["metric"] == "system_risk")]["value"]
    std = f"{values.std(ddof=0):.2f}"
    expected = f"{values.mean():.2f} ± {std[1:] if std.startswith('0.') else std}"
    ddx_block = markdown.split("(`ddxplus8`)", 1)[1].split("### ", 1)[0]
    assert f"| D-CEM | {expected} | 0.06 ± .03 |" in ddx_block
    one = medqa[(medqa["method"] == "single") & (medqa["metric"] == "system_risk")]["value"].iloc[0]
    medqa_block = markdown.split("(`medqa-tri`)", 1)[1]
    assert f"| Single | {one:.2f} | 0.73 ± .06 | — | 0.73 ± .06 |" in medqa_block
    assert "ours (seeds 0, 1, CAL/TEST 12/8 per cell" in ddx_block and "ours (seed 0," in medqa_block
    assert "Accuracy, ours (S1 / S2 / S3a / S3b): Single " in medqa_block
    assert "D-CEM action mix over the rounds played" in medqa_block


def test_reproduction_block_cuts_between_markers() -> None:
    text = "intro\n<!-- dcem-clinical:begin -->\n\n| a |\n\n<!-- dcem-clinical:end -->\nrest"
    assert reproduction_block(text, "dcem-clinical") == "| a |"
    with pytest.raises(InputError, match="no block <!-- other:begin -->"):
        reproduction_block(text, "other")
    with pytest.raises(InputError, match="dcem-clinical:end"):
        reproduction_block("<!-- dcem-clinical:end --> <!-- dcem-clinical:begin -->", "dcem-clinical")


def test_a_broken_paper_file_is_refused(tmp_path: Path) -> None:
    from dcem_clinical.report.paper import PAPER_TABLES

    bad = tmp_path / "p.json"
    text = PAPER_TABLES.read_text(encoding="utf-8").replace('"S1": [0.08, 0.04]', '"S1": [0.08]', 1)
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"ddxplus8 table6 system_risk single S1: expected \[mean, std\]"):
        load_paper_tables(bad)
    shutil.copy(PAPER_TABLES, tmp_path / "ok.json")
    assert load_paper_tables(tmp_path / "ok.json") == load_paper_tables()
