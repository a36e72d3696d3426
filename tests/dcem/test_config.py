"""Validation of MediatorConfig (ConfigError) and Panel (InputError), field by field."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel, three_level_loss
from dcem.core.replay import score_probabilities, score_reports
from common.errors import ConfigError, ProjectError, InputError

LABELS = ("a", "b", "c")
CONF = np.array([[[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]] * 2)
PRIOR = np.full(3, 1 / 3)
LOSS = three_level_loss(3, [2], 5.0)


def _config_error(field: str, **values: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        MediatorConfig(**values)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}:")
    return info.value


def test_defaults_are_valid_and_round_trip() -> None:
    cfg = MediatorConfig()
    assert cfg.eps_safe < cfg.eps_low
    assert MediatorConfig.from_mapping(cfg.to_dict()) == cfg
    assert cfg.with_changes(delta=0.2).delta == 0.2
    assert isinstance(MediatorConfig(alpha=2).alpha, float)


def test_eps_safe_must_be_below_eps_low() -> None:
    _config_error("eps_safe", eps_safe=1.0, eps_low=1.0)
    _config_error("eps_safe", eps_safe=2.0, eps_low=1.0)
    with pytest.raises(ConfigError):
        MediatorConfig().with_changes(eps_low=0.1)


@pytest.mark.parametrize("field", ["alpha", "beta", "gamma", "lambda_pool", "eps_safe",
                                   "m_safe", "s_asym"])
def test_negative_values_refused(field: str) -> None:
    _config_error(field, **{field: -0.5})


@pytest.mark.parametrize("field", ["alpha", "beta", "gamma", "lambda_pool", "rho_min",
                                   "omega_min", "eps_safe", "eps_low", "m_safe", "delta",
                                   "s_asym"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "1.0", None, True])
def test_non_finite_or_non_numeric_refused(field: str, bad: Any) -> None:
    _config_error(field, **{field: bad})


@pytest.mark.parametrize("value", [0.0, 1.0, -0.1, 1.5])
def test_rho_min_open_unit_interval(value: float) -> None:
    _config_error("rho_min", rho_min=value)


@pytest.mark.parametrize("value", [-0.01, 0.51, 1.0])
def test_omega_min_closed_half_interval(value: float) -> None:
    _config_error("omega_min", omega_min=value)


def test_interval_end_points_accepted() -> None:
    assert MediatorConfig(omega_min=0.0).omega_min == 0.0
    assert MediatorConfig(omega_min=0.5).omega_min == 0.5
    assert MediatorConfig(rho_min=0.999).rho_min == 0.999


@pytest.mark.parametrize("field", ["window", "t_max"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, 2.0, "3", None, True])
def test_integer_fields(field: str, bad: Any) -> None:
    _config_error(field, **{field: bad})


def test_unknown_choices_refused() -> None:
    _config_error("prior", prior="jeffreys")
    _config_error("steer_gate", steer_gate="entropy")
    _config_error("escalation", escalation=1)
    assert MediatorConfig(prior="empirical", steer_gate="reliability_gap").prior == "empirical"


def test_from_mapping() -> None:
    with pytest.raises(ConfigError) as info:
        MediatorConfig.from_mapping({"eps_safe": 0.5, "epsilon": 1.0})
    assert info.value.field == "epsilon"
    cfg = MediatorConfig.from_mapping({"window": 3.0, "t_max": 6.0, "eps_low": 2})
    assert (cfg.window, cfg.t_max, cfg.eps_low) == (3, 6, 2.0)
    assert isinstance(cfg.window, int) and isinstance(cfg.t_max, int)
    with pytest.raises(ConfigError) as info:
        MediatorConfig.from_mapping({"t_max": 6.5})
    assert info.value.field == "t_max"
    assert MediatorConfig.from_mapping({}) == MediatorConfig()


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        MediatorConfig().alpha = 2.0  # type: ignore[misc]


def _input_error(field: str, **changes: Any) -> InputError:
    values = {"labels": LABELS, "confusion": CONF, "prior": PRIOR, "loss": LOSS} | changes
    with pytest.raises(InputError) as info:
        Panel(**values)
    assert info.value.field == field
    assert isinstance(info.value, ProjectError) and isinstance(info.value, ValueError)
    return info.value


def test_panel_valid_and_read_only() -> None:
    panel = Panel(LABELS, CONF, PRIOR, LOSS)
    assert (panel.n_labels, panel.n_agents) == (3, 2)
    assert panel.label_index("c") == 2
    with pytest.raises(ValueError):
        panel.confusion[0, 0, 0] = 0.5
    assert Panel(LABELS, CONF[0], PRIOR, LOSS).n_agents == 1  # a single (K, K) matrix


def test_confusion_rules() -> None:
    rows = CONF.copy()
    rows[1, 2] = [0.5, 0.3, 0.3]
    assert "row 2" in str(_input_error("confusion", confusion=rows))
    zero = CONF.copy()
    zero[0, 1] = [0.2, 0.8, 0.0]
    assert "strictly" in str(_input_error("confusion", confusion=zero))
    negative = CONF.copy()
    negative[0, 0] = [1.2, -0.1, -0.1]
    _input_error("confusion", confusion=negative)
    nan = CONF.copy()
    nan[0, 0, 0] = np.nan
    _input_error("confusion", confusion=nan)
    _input_error("confusion", confusion=CONF[:, :2, :2])
    _input_error("confusion", confusion=np.ones((2, 3, 3, 1)))
    _input_error("confusion", confusion=np.empty((0, 3, 3)))
    _input_error("confusion", confusion=[["x"]])


def test_loss_rules() -> None:
    negative = LOSS.copy()
    negative[0, 1] = -1.0
    assert "[0][1]" in str(_input_error("loss", loss=negative))
    nan = LOSS.copy()
    nan[1, 0] = np.nan
    _input_error("loss", loss=nan)
    inf = LOSS.copy()
    inf[1, 0] = np.inf
    _input_error("loss", loss=inf)
    _input_error("loss", loss=np.zeros((3, 2)))
    with pytest.raises(InputError) as info:
        three_level_loss(3, [5], 2.0)
    assert info.value.field == "high_risk"
    with pytest.raises(InputError) as info:
        three_level_loss(3, [1], -1.0)
    assert info.value.field == "l_high"


def test_prior_rules() -> None:
    _input_error("prior", prior=np.array([0.5, 0.3, 0.3]))
    _input_error("prior", prior=np.array([0.5, 0.5, 0.0]))
    _input_error("prior", prior=np.array([0.5, 0.5]))
    _input_error("prior", prior=np.array([np.nan, 0.5, 0.5]))


def test_label_rules() -> None:
    _input_error("labels", labels=("a", "b", "a"), confusion=CONF)
    _input_error("labels", labels=("a",), confusion=CONF[:, :1, :1], prior=[1.0], loss=[[0.0]])
    _input_error("labels", labels=("a", "", "c"))
    _input_error("labels", labels=("a", "b", 3))
    panel = Panel(LABELS, CONF, PRIOR, LOSS)
    with pytest.raises(InputError) as info:
        panel.label_index("zebra")
    assert info.value.field == "reports"


def test_report_rules() -> None:
    panel, cfg = Panel(LABELS, CONF, PRIOR, LOSS), MediatorConfig()
    for bad in (np.zeros((2, 3, 3), dtype=int), np.full((2, 3, 2), 3), np.full((2, 3, 2), -1),
                np.zeros((2, 3, 2)), np.zeros((2, 2), dtype=int), np.zeros((2, 0, 2), dtype=int)):
        with pytest.raises(InputError) as info:
            score_reports(panel, bad, cfg)
        assert info.value.field == "reports"
    for bad in (np.ones((2, 3, 2, 2)), -np.ones((2, 3, 2, 3)), np.zeros((2, 3, 2, 3)),
                np.full((2, 3, 2, 3), np.nan), np.ones((3, 2, 3))):
        with pytest.raises(InputError) as info:
            score_probabilities(panel, bad, cfg)
        assert info.value.field == "probabilities"
