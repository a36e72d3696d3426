"""A group whose members read different views of a DDXPlus-8 case: config, prompts, twins."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinical.questions import load_benchmark
from common.errors import ConfigError
from sag.group.config import AgentRole, GroupConfig, load_group_file, preset
from sag.debate.hybrid import Debate
from sag.group.member_views import check_view_items, member_reading, twin_items, twin_of
from sag.group.prompts import describe
from sag.group.transcript import GroupMessage

GROUP_FILE = Path(__file__).resolve().parents[3] / "data" / "groups" / "ddx-views.json"


def _group(**changes: object) -> GroupConfig:
    values = {"name": "v", "counts": (3, 0, 1, 1), "views": ("complaint", "history", "pain-character"),
              "alternatives": 2, **changes}
    return GroupConfig(**values)  # type: ignore[arg-type]


def test_views_are_checked_and_leave_older_groups_as_they_were() -> None:
    with pytest.raises(ConfigError, match="one view per reasoning agent"):
        _group(views=("complaint", "history"))
    with pytest.raises(ConfigError, match="unknown view 'pain'"):
        _group(views=("complaint", "history", "pain"))
    with pytest.raises(ConfigError, match="not an agent id"):
        _group(agent_models={"X1": "smollm2-135m"})
    # a group without the new fields hashes and serialises as before they existed
    assert "views" not in preset("sag-6").to_dict() and "agent_models" not in preset("sag-6").to_dict()
    assert preset("sag-6").digest() == "8176aaf407da"
    cfg = _group(agent_models={"R2": "smollm2-135m+lora:x"})
    assert GroupConfig.from_mapping(cfg.to_dict()) == cfg
    assert [a.model for a in cfg.agents()][:3] == ["smollm2-135m", "smollm2-135m+lora:x", "smollm2-135m"]
    assert cfg.view_of("R3") == "pain-character" and cfg.view_of("J1") is None


def test_the_shipped_group_file_reads() -> None:
    cfg = load_group_file(GROUP_FILE)
    assert cfg.views == ("pain-location", "history", "pain-character") and cfg.role_counts() == (3, 0, 1, 1)


def test_a_member_reads_its_view_after_the_shared_transcript_and_the_judge_reads_no_case() -> None:
    item = load_benchmark("ddxplus8")[5]
    debate = Debate(item, _group(), engine=None, retrievers={})  # type: ignore[arg-type]
    case_text = item.question.rpartition("\n\n")[0]
    shared = debate.transcript.text()
    assert case_text not in shared and "Which of the following" in shared
    prompts = {a.agent_id: debate.turn(i, a, 0, "propose").messages[1].content for i, a in enumerate(debate.agents)}
    history = member_reading(item, "history")
    assert prompts["R2"].startswith(shared) and history in prompts["R2"]
    assert prompts["R2"].index(history) < prompts["R2"].index("Your turn")
    assert "You read only the history and risk factors" in prompts["R2"]
    assert history not in prompts["R1"] and history not in prompts["J1"]
    assert not any(member_reading(item, v) in prompts["J1"] for v in ("complaint", "pain-character"))


def test_transcript_lines_say_what_a_member_read_and_its_runners_up() -> None:
    message = GroupMessage(round=0, phase="propose", agent_id="R2", role=AgentRole.REASONING, model="m",
                           answer="B", distribution=(0.1, 0.6, 0.05, 0.05, 0.1, 0.05, 0.03, 0.02))
    line = describe(message, read="the history and risk factors", alternatives=2)
    assert line.startswith("- R2 (reasoning, read the history and risk factors): answer B (p=0.60; then A 0.10, E 0.10)")
    assert describe(message).startswith("- R2 (reasoning): answer B (p=0.60).")  # other groups: unchanged


def test_items_that_are_not_ddxplus_cases_are_refused() -> None:
    medqa = load_benchmark("medqa")[0]
    with pytest.raises(ConfigError, match="DDXPlus-8 cases only"):
        check_view_items([medqa])


def test_twins_swap_sex_or_move_age_and_keep_the_evidence() -> None:
    from clinical.ddxplus import load_ddxplus8

    case = next(c for c in load_ddxplus8() if c.sex == "F" and c.age >= 18)
    item = next(it for it in load_benchmark("ddxplus8") if it.item_id == case.case_id)
    sex, age = twin_items([item])
    assert twin_of(sex.item_id) == (item.item_id, "sex") and twin_of(item.item_id) == (item.item_id, None)
    assert sex.answer == age.answer == item.answer
    assert f"{case.age}-year-old woman" in item.question and f"{case.age}-year-old man" in sex.question
    moved = case.age + 30 if case.age < 45 else case.age - 30
    assert f"{moved}-year-old woman" in age.question
    # the evidence is the case's own: only the opening sentence differs
    assert member_reading(sex, "pain-character").split(".", 1)[1] == member_reading(item, "pain-character").split(".", 1)[1]


def test_a_view_group_draws_the_usual_items_and_calibrates_on_the_rest() -> None:
    from sag.runs.run import SagRunSpec, load_items

    items = load_items("ddxplus8")
    plain, _ = SagRunSpec("ddxplus8", _group(), 200, 0).split(items)
    mediated, cal = SagRunSpec("ddxplus8", _group(method="dcem", n_cal=130), 200, 0).split(items)
    assert [i.item_id for i in plain] == [i.item_id for i in mediated]
    assert len(cal) == 130 and not {i.item_id for i in cal} & {i.item_id for i in plain}
    assert json.loads(json.dumps(_group().to_dict()))["views"] == ["complaint", "history", "pain-character"]


def test_sag_ask_debates_a_case_by_id_and_says_what_each_member_read(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    from tests.cli_inprocess import run_main
    from tests.sag.cli_fakes import scripted_models

    def policy(agent: str, prompt: str, request: object) -> tuple[str, str]:
        return ("D" if agent == "R2" or "R2 (reasoning" in prompt else "B"), "because"

    scripted_models(monkeypatch, policy)
    got = run_main("sag", ["ask", "ddx-0004", "--group", str(GROUP_FILE), "--db", str(tmp_path / "s.duckdb")])
    code, out, err = got.returncode, got.stdout, got.stderr
    assert code == 0, err
    assert "R2 read the history and risk factors: " in out and "the judge and the safety agent read none" in out
    assert "R1 (read where the pain is and where it spreads) changed B to D in round 1, after R2 said D in round 0" in out
    got = run_main("sag", ["ask", "What is it?\nA. x\nB. y", "--group", str(GROUP_FILE), "--db",
                           str(tmp_path / "s.duckdb")])
    code, err = got.returncode, got.stderr
    assert code == 2 and "give its id" in err and "Traceback" not in err
