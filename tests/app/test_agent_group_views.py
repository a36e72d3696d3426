"""Agent group page on a view group's run: each lane says what its member read, the items
where a member changed its answer can be picked alone, and the debate's turns are named."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from sag.group.config import GroupConfig
from sag.runs.run import SagRunSpec, run_sag
from sag.store.tables import SagStore
from tests.sag.fakes import ScriptedTurns

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "agent_group.py")
CFG = GroupConfig(name="views-test", counts=(3, 0, 1, 1), views=("complaint", "history", "pain-character"),
                  t_max=1, rationale_tokens=8)
_LINE = re.compile(r"- (R\d) \([^)]*\): answer ([A-H])")


def _policy(agent: str, prompt: str, request: object) -> tuple[str, str]:
    """R2 answers D; R1 answers B then, in round 1, takes R2's letter; R3 holds E; the judge
    takes R2's last letter."""
    said = dict(_LINE.findall(prompt))
    if agent == "R1":
        return (said["R2"] if said else "B"), "reconsidered"
    if agent in ("R2", "J1"):
        return "D", "fits"
    return ("E" if agent == "R3" else "A"), "holds"


@pytest.fixture(scope="module")
def views_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("agent_views") / "sag.duckdb"
    spec = SagRunSpec("ddxplus8", CFG, n_items=3, seed=0)
    with SagStore(path) as store:
        summary = run_sag(store, spec, runners={m: ScriptedTurns(_policy) for m in CFG.models()}, retrievers={})
    return path, summary.run_id


def test_lanes_say_what_each_member_read_and_the_turns_are_named(views_db: tuple[Path, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(views_db[0]))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    markdown = [m.value for m in at.markdown]
    assert any(m.startswith("**R2** (read: the history and risk factors) → **D**") for m in markdown)
    assert any(m.startswith("**R1** read the chief complaint: A ") for m in markdown)  # the text it read
    assert any("R1 (read the chief complaint) changed B to D in round 1, after R2 said D in round 0" in m
               for m in markdown)
    box = next(c for c in at.checkbox if c.label.startswith("Only items where a member changed its answer"))
    assert "(3 of 3)" in box.label
    box.check().run()
    assert not at.exception
    assert len(next(s for s in at.selectbox if s.label == "Item").options) == 3
