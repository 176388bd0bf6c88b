"""The one JSON sanitizer: any value the package writes to a ``.json`` file, as plain JSON data.

``json.dumps`` accepts dicts with string keys, lists, strings, finite numbers, booleans and None (with
``allow_nan=False``). Parameters, privacy figures and reports also hold tuples, sets, paths, numpy
scalars and non-finite floats; :func:`json_data` converts them once, the same way for manifest.json,
report.json, summary.json and the method parameters. (The verifier keeps its own reader on purpose:
it imports nothing of the producer.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import numpy as np

__all__ = ["json_data"]


def json_data(value: Any, /, *, strict: bool = False, digits: int | None = None) -> Any:
    """``value`` as JSON data: what ``json.dumps(..., allow_nan=False)`` writes without a ``default`` hook.

    Mappings become dicts with ``str`` keys; lists and tuples lists; sets and frozensets lists sorted by
    their text; numpy scalars Python numbers; paths POSIX text. With ``digits`` every float is rounded to
    that many significant digits (``float(f"{x:.{digits}g}")``: report.json keeps two runs byte-identical
    when sums are added in a thread-dependent order).

    Args:
        value: any value.
        strict: raise instead of converting what JSON cannot hold: a non-finite float
            (``ValueError``), a value of another type (``TypeError``). Not strict: None and ``str(value)``.
        digits: significant digits of floats; None keeps them exact.

    Raises:
        ValueError: a non-finite float, with ``strict``.
        TypeError: a value of another type, with ``strict``.
    """
    if isinstance(value, Mapping):
        return {str(k): json_data(v, strict=strict, digits=digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_data(v, strict=strict, digits=digits) for v in value]
    if isinstance(value, set | frozenset):
        return [json_data(v, strict=strict, digits=digits) for v in sorted(value, key=str)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, PurePath):
        return value.as_posix()
    if isinstance(value, float):
        if not math.isfinite(value):
            if strict:
                raise ValueError(f"{value!r}")
            return None
        return float(f"{value:.{digits}g}") if digits is not None else value
    if value is None or isinstance(value, bool | int | str):
        return value
    if strict:
        raise TypeError(f"{value!r} of type {type(value).__name__}")
    return str(value)
