"""The one vocabulary: methods join the registry once and every reader sees them."""
from __future__ import annotations

import pytest

from dcem.analysis.report import comparison_table
from dcem.core import vocabulary as vocab
from dcem.core.config import MediatorConfig
from common.errors import ConfigError


def test_default_methods_in_display_order() -> None:
    assert vocab.DEFAULT_METHODS == ("single", "free", "pool", "dcem", "dcem_noesc")
    assert vocab.mediated_methods() == {"dcem": True, "dcem_noesc": False}
    assert vocab.method_label("dcem_noesc") == "D-CEM w/o escalation"
    assert vocab.method_label("never-registered") == "never-registered"


def test_a_new_method_joins_without_editing_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vocab, "_REGISTRY", dict(vocab._REGISTRY))  # undone after the test
    vocab.register_method(vocab.Method("sag_dcem", "SAG + D-CEM", mediated=True, escalation=True, family="sag"))
    assert vocab.method_keys()[-1] == "sag_dcem"
    assert vocab.mediated_methods()["sag_dcem"] is True and vocab.escalates("sag_dcem")
    assert vocab.order_methods({"zeta", "sag_dcem", "single"}) == ["single", "sag_dcem", "zeta"]
    import pandas as pd
    rows = pd.DataFrame({"scenario": ["S1", "S1"], "seed": [0, 0], "method": ["sag_dcem", "single"],
                         "metric": ["accuracy", "accuracy"], "value": [0.5, 0.25]})
    assert list(comparison_table(rows)["method"].astype(str)) == ["single", "sag_dcem"]
    # the same entry again is fine; a different one under a known key is refused
    vocab.register_method(vocab.Method("sag_dcem", "SAG + D-CEM", mediated=True, escalation=True, family="sag"))
    with pytest.raises(ConfigError, match="already registered"):
        vocab.register_method(vocab.Method("sag_dcem", "other label"))


@pytest.mark.parametrize("kwargs, field", [
    ({"key": "bad key!", "label": "x"}, "method"),
    ({"key": "x", "label": "x", "escalation": True}, "escalation"),
])
def test_invalid_methods_are_refused(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        vocab.Method(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_unknown_method_and_unmediated_escalation_are_errors() -> None:
    with pytest.raises(ConfigError, match="unknown method"):
        vocab.method("nope")
    with pytest.raises(ConfigError, match="not mediated"):
        vocab.escalates("single")


def test_config_validates_against_the_vocabulary() -> None:
    assert MediatorConfig(steer_gate=vocab.STEER_GATES[1]).steer_gate == "reliability_gap"
    with pytest.raises(ConfigError) as info:
        MediatorConfig(steer_gate="loudest")
    assert info.value.field == "steer_gate"
