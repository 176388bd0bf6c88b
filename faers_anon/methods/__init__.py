"""Comparison methods of SPEC §7 that are algorithms rather than clustering models (STYLE §6).

Each method takes a cases frame (``cases.parquet``) and returns a :class:`MethodResult` whose release
has the partition-frame columns, its own privacy figures, its parameters and its run time. The harness
enumerates :data:`METHODS`::

    method = METHODS["mews"]
    result = method(cases, config=method.config_type(max_width=0.1), rng=np.random.default_rng(seed))

To add a method: write its module (a frozen ``...Config`` with ``describe()`` and a function
``f(cases, /, *, config, rng, trees=None) -> MethodResult``) and add one :class:`Method` line below,
with its :class:`Capabilities` (which run options it takes, whether it publishes the item lists in its
own form): no module outside this package names a method (``tests/faers_anon/methods/test_capabilities.py``).
"""

from __future__ import annotations

from types import MappingProxyType

from faers_anon.methods._disassociation_publish import DISASSOCIATED_LISTS
from faers_anon.methods.base import Capabilities, ItemForm, Method, MethodResult
from faers_anon.methods.disassociation import DisassociationConfig, disassociation
from faers_anon.methods.kl_anonymity import KLConfig, kl_anonymity
from faers_anon.methods.random_anonymization import (
    EnhancedRAConfig,
    RAConfig,
    enhanced_random_anonymization,
    random_anonymization,
)
from faers_anon.methods.swapping import (
    EquiDepthConfig,
    EquiWidthConfig,
    equi_depth_swapping,
    equi_width_swapping,
)

__all__ = [
    "METHODS",
    "Capabilities",
    "DisassociationConfig",
    "EnhancedRAConfig",
    "EquiDepthConfig",
    "EquiWidthConfig",
    "ItemForm",
    "KLConfig",
    "Method",
    "MethodResult",
    "RAConfig",
    "disassociation",
    "enhanced_random_anonymization",
    "equi_depth_swapping",
    "equi_width_swapping",
    "kl_anonymity",
    "random_anonymization",
]

_ENTRIES = (
    Method("ra", RAConfig, random_anonymization, "Yang & Qiao 2010, Algorithm 1"),
    Method("enhanced-ra", EnhancedRAConfig, enhanced_random_anonymization, "Yang & Qiao 2010, Algorithm 2"),
    Method(
        "kl-anonymity",
        KLConfig,
        kl_anonymity,
        "(k,l)-anonymity for multiple sensitive attributes",
        Capabilities(group_size=True, sensitive_lists=True),
    ),
    Method("meds", EquiDepthConfig, equi_depth_swapping, "multivariate equi-depth swapping, Algorithm 1"),
    Method("mews", EquiWidthConfig, equi_width_swapping, "multivariate equi-width swapping, Algorithm 2"),
    Method(
        "disassociation",
        DisassociationConfig,
        disassociation,
        "Loukides et al. 2014, Fig. 6",
        Capabilities(group_size=True, seeded=True, item_form=DISASSOCIATED_LISTS),
    ),
)

METHODS: MappingProxyType[str, Method] = MappingProxyType({m.name: m for m in _ENTRIES})
"""Registry name → :class:`Method`; read-only. Names are the ``method`` of each result."""
