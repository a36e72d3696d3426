"""D-CEM: the loss-aware diagnostic consensus energy mediator.

Pure numerical library: no Streamlit and no language-model imports.
"""
from dcem.config import MediatorConfig
from dcem.errors import ConfigError, DcemError, InputError
from dcem.panel import Panel, three_level_loss
from dcem.policy import Action

__all__ = ["Action", "ConfigError", "DcemError", "InputError", "MediatorConfig", "Panel",
           "three_level_loss"]
