"""Privacy models (SPEC §5, §7) and the registry the CLI, the pipeline and the common tests enumerate.

``MODELS`` maps a model's name to its factory; every factory takes the keyword options ``k`` and
``thetas`` (value → θ_s) and returns a :class:`~faers_anon.models.base.GroupModel`. The clustering
engine never looks a model up by name: it reads the model's requirements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from faers_anon.errors import ConfigError
from faers_anon.models.alpha_k_anonymity import AlphaKAnonymity
from faers_anon.models.base import CaseStats, GroupModel, GroupStats, Requirements
from faers_anon.models.k_anonymity import KAnonymity
from faers_anon.models.l_diversity import LDiversity
from faers_anon.models.ms_k_theta import MSKTheta
from faers_anon.models.xy_anonymity import XYAnonymity

__all__ = [
    "MODELS",
    "AlphaKAnonymity",
    "CaseStats",
    "GroupModel",
    "GroupStats",
    "KAnonymity",
    "LDiversity",
    "MSKTheta",
    "Requirements",
    "XYAnonymity",
    "make_model",
]

ModelFactory = Callable[..., GroupModel]

MODELS: Mapping[str, ModelFactory] = MappingProxyType(
    {
        "ms-k-theta": MSKTheta,
        "k-anonymity": KAnonymity,
        "xy-anonymity": XYAnonymity,
        "l-diversity": LDiversity,
        "alpha-k-anonymity": AlphaKAnonymity,
    }
)


def make_model(name: str, *, k: int, thetas: Mapping[str, float]) -> GroupModel:
    """Build a registered model by name.

    Raises:
        ConfigError: unknown name (the message lists the registered ones) or invalid parameters.
    """
    if name not in MODELS:
        raise ConfigError(f"model: unknown model {name!r} (expected one of {', '.join(sorted(MODELS))})")
    return MODELS[name](k=k, thetas=thetas)
