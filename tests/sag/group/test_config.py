"""Group configurations: presets, sizes, backbones, methods and validation."""
from __future__ import annotations

import pytest

from common.errors import ConfigError
from sag.group.config import DEFAULT_MODEL, MIXED_MODEL, SIZES, AgentRole, GroupConfig, preset


def _roles(cfg: GroupConfig) -> list[int]:
    return [sum(1 for a in cfg.agents() if a.role is r) for r in AgentRole]


@pytest.mark.parametrize("size", [6, 10, 15])
def test_sizes_follow_appendix_h(size: int) -> None:
    cfg = preset(f"sag-{size}")
    assert cfg.size == size and tuple(_roles(cfg)) == SIZES[size]
    assert [a.agent_id for a in cfg.agents()][:2] == ["R1", "R2"]
    assert cfg.models() == (DEFAULT_MODEL,)


def test_mixed_preset_splits_roles_across_two_backbones() -> None:
    cfg = preset("sag-6-mixed")
    by_role = {a.role: a.model for a in cfg.agents()}
    assert by_role[AgentRole.REASONING] == by_role[AgentRole.JUDGE] == MIXED_MODEL
    assert by_role[AgentRole.KNOWLEDGE] == by_role[AgentRole.SAFETY] == DEFAULT_MODEL
    assert set(cfg.models()) == {MIXED_MODEL, DEFAULT_MODEL}


@pytest.mark.parametrize("name, counts", [("sag-6-no_reasoning", [0, 2, 1, 1]), ("sag-6-no-knowledge", [2, 0, 1, 1]),
                                          ("sag-6-no_safety", [2, 2, 0, 1]), ("sag-6-no_judge", [2, 2, 1, 0]),
                                          ("sag-10-majority", [3, 3, 2, 2]), ("single", [1, 0, 0, 0]),
                                          ("sag-15-mixed-dcem", [5, 5, 3, 2])])
def test_methods_by_name(name: str, counts: list[int]) -> None:
    assert _roles(preset(name)) == counts


def test_knowledge_agents_cycle_through_the_corpora() -> None:
    corpora = [a.corpus for a in preset("sag-10").agents() if a.role is AgentRole.KNOWLEDGE]
    assert corpora == ["medlineplus", "pubmedqa", "ddxplus"]
    assert all(a.corpus is None for a in preset("sag-10").agents() if a.role is not AgentRole.KNOWLEDGE)


@pytest.mark.parametrize("name", ["sag-7", "sag", "group-6", "sag-6-bogus", "sag-6-single", "", "sag-x"])
def test_unknown_presets_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="group"):
        preset(name)


@pytest.mark.parametrize("changes, field", [({"t_max": 0}, "t_max"), ({"counts": (0, 0, 0, 0)}, "counts"),
                                            ({"temperature": -1.0}, "temperature"), ({"top_p": 0.0}, "top_p"),
                                            ({"method": "vote"}, "method"), ({"corpora": ("web",)}, "corpora"),
                                            ({"backbones": ("a", "b")}, "backbones"), ({"t_max": True}, "t_max"),
                                            ({"loss": ((0.0, 1.0),)}, "loss"), ({"rationale_tokens": 0}, "rationale")])
def test_bad_values_name_their_field(changes: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        GroupConfig(**changes)


def test_from_mapping_and_digest() -> None:
    cfg = GroupConfig.from_mapping({"name": "mine", "counts": [2, 2, 1, 1], "t_max": 2})
    assert cfg.counts == (2, 2, 1, 1) and cfg.size == 6
    assert cfg.digest() == GroupConfig.from_mapping(cfg.to_dict()).digest()
    assert cfg.digest() != cfg.with_changes(t_max=3).digest()
    with pytest.raises(ConfigError, match="unknown field"):
        GroupConfig.from_mapping({"name": "x", "agents": 3})
    with pytest.raises(ConfigError, match="JSON object"):
        GroupConfig.from_mapping([1, 2])  # type: ignore[arg-type]
