"""Every term a page shows is in the Glossary: run each page on stored runs, collect the
technical terms it shows (metric labels, table headers in code, abbreviations and code
names in its text) and check each is a glossary term's name or words.

A term counts as in the Glossary when it is a term's name (as the code spells it), its
words, or one word of its words (``HRR`` in "HRR (harmful refusal rate)").  Names that
are not terms -- the datasets' class labels, benchmark and model names, answer letters,
file formats -- are listed below with the reason.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Iterable

import pytest
from streamlit.testing.v1 import AppTest

from clinical.ddxplus import LABELS as DDXPLUS_LABELS
from studio.views.glossary import GLOSSARY_GROUPS

ROOT = Path(__file__).resolve().parents[2]
_TOKEN = re.compile(r"(?<![\w`-])(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{2,}[0-9]*(?:-[0-9])?|A_[RKSJ]|S\(t\)"
                    r"|eps_[a-z]+|[a-z]+_[a-z_]+)(?![\w`])")
NOT_TERMS = {  # shown, but not terms of the method: names, letters, formats
    *(label.upper() for label in DDXPLUS_LABELS), "GERD", "URTI",  # class labels of the datasets
    "DDXPLUS", "MEDQA", "MEDMCQA", "PUBMEDQA", "MMLU", "AGENTCLINIC", "M-QA", "MCQA",  # benchmarks
    "CSV", "JSON", "GGUF", "LORA", "GPU", "CPU", "URL", "ID", "OK", "AM", "PM", "MB", "GB", "KV",  # formats, units
    "REFUSE", "ESCALATE",  # the answers a group gives instead of an option (the pages say what they do)
    "SAG", "LLM", "BM25", "RAG", "FLOPS", "QA",  # names of systems and techniques the pages spell out
    "NSTEMI", "STEMI", "HIV", "ECG", "STD", "QRS", "QT",  # medical abbreviations in case texts
    "GPQA", "NEJM", "OSCE", "EQUITYMEDQA",  # benchmarks the SAG paper reports on
    "DEC",  # the seed's notation 1[u = DEC], quoted inside the definition of Decided
    "DCEM_CLINICAL",  # a command's module name (python -m dcem_clinical ...)
}


def _names() -> set[str]:
    names: set[str] = set()
    for _, terms in GLOSSARY_GROUPS:
        for key, term in terms.items():
            names |= {key.lower(), term.words.lower(), *(t.lower() for t in _TOKEN.findall(term.words))}
            names |= {w.strip("(),.").lower() for w in term.words.split() if len(w.strip("(),.")) > 1}
    return names


def _texts(at: AppTest) -> Iterable[str]:
    for kind in ("markdown", "caption", "info", "warning", "subheader", "title", "success", "error"):
        yield from (str(e.value) for e in at.get(kind))
    yield from (str(m.label) for m in at.metric)


def _columns(at: AppTest) -> Iterable[str]:
    """Each table's headers as shown: a column's configured title, else its name."""
    for frame in at.dataframe:
        titles = json.loads(frame.proto.columns or "{}")
        for column in frame.value.columns:
            shown = str((titles.get(str(column)) or {}).get("label") or column)
            if "_" in shown:  # a code name; words are plain headers
                yield shown


def _tokens(at: AppTest) -> set[str]:
    plain = (re.sub(r"`[^`]*`", "", text).replace("\\_", "_") for text in _texts(at))  # no code, no escapes
    found = {t for text in plain for t in _TOKEN.findall(text)}
    return found | set(_columns(at))


def _missing(at: AppTest) -> set[str]:
    names = _names()
    return {t for t in _tokens(at) if t.lower() not in names and t.upper() not in NOT_TERMS
            and not re.fullmatch(r"(llm|syn|sag|eval)[-_].*|.*[0-9]{3,}.*", t.lower())}


def _page(script: str, db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(db))
    monkeypatch.setenv("DCEM_DEMO", "0")
    return AppTest.from_file(str(ROOT / "pages" / script), default_timeout=120).run()


@pytest.mark.parametrize("script", ["overview.py", "whatif.py", "walkthrough.py", "experiments.py", "review.py",
                                    "calibration.py", "models.py", "glossary.py"])
def test_every_term_on_a_dcem_page_is_in_the_glossary(script: str, clinical_db: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "terms.duckdb"
    shutil.copy(clinical_db, db)
    at = _page(script, db, monkeypatch)
    assert not at.exception
    assert not _missing(at), f"{script} shows terms the Glossary lacks: {sorted(_missing(at))}"


@pytest.fixture(scope="module")
def sag_pages_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with stored group runs and a core evaluation of scripted agents."""
    from tests.app.test_sag_eval_page import _eval_store
    from tests.sag.group_runs import build_group_runs

    path = tmp_path_factory.mktemp("terms_sag") / "sag.duckdb"
    build_group_runs(path, tmp_path_factory.mktemp("terms_idx"))
    _eval_store(path)
    return path


@pytest.mark.parametrize("script", ["agent_group.py", "sag_evaluation.py"])
def test_every_term_on_a_group_page_is_in_the_glossary(script: str, sag_pages_db: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "terms.duckdb"
    shutil.copy(sag_pages_db, db)
    monkeypatch.setenv("DCEM_SAG_EXPORTS", str(tmp_path / "no-exports"))
    at = _page(script, db, monkeypatch)
    assert not at.exception
    shown = _tokens(at)
    assert shown, "the page showed no technical term at all: the collection is broken"
    assert not _missing(at), f"{script} shows terms the Glossary lacks: {sorted(_missing(at))}"
