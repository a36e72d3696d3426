"""D-CEM: the loss-aware diagnostic consensus energy mediator (seed 003).

Pure numerical library: no Streamlit and no language-model imports.  Subpackages:
:mod:`dcem.core` (the equations and the policy), :mod:`dcem.synthetic` (the rule-guided
world), :mod:`dcem.calibration`, :mod:`dcem.analysis` and :mod:`dcem.store`.
"""
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel, three_level_loss
from dcem.core.policy import Action
from common.errors import ConfigError, ProjectError, InputError

__all__ = ["Action", "ConfigError", "ProjectError", "InputError", "MediatorConfig", "Panel",
           "three_level_loss"]
