"""The few HTML pieces report.html is built from: escaped text, shares, numbers and fixed-width tables.

Tables are ``table-layout: fixed`` at 100% of the page (max 1240 px, report_html's style), with column
widths in per cent, so every table fits a 1400 px window and long words wrap.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

__all__ = ["e", "pct", "num", "table"]


def e(value: Any) -> str:
    """``value`` as escaped HTML text."""
    return html.escape(str(value))


def pct(value: Any) -> str:
    """A share as a percentage with one decimal (0.5 → ``50.0%``); ``–`` for None."""
    return "–" if value is None else f"{100 * float(value):.1f}%"


def num(value: Any, digits: int = 3) -> str:
    """An int with thousands separators, a float with ``digits`` significant digits; ``–`` for None."""
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{float(value):.{digits}g}"


def table(head: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int] | None = None) -> str:
    """A table of already escaped cells; ``widths`` in per cent of the page, one per column."""
    cols = "".join(f"<col style='width:{w}%'>" for w in widths) if widths else ""
    header = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><colgroup>{cols}</colgroup><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"
