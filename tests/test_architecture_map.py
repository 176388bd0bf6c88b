"""Issue 13: docs/architecture.md maps every module of faers_anon/ in one line (a newcomer's index)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_module_has_one_line_in_the_map() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- `([^`]+\.py)`: \S", section, flags=re.M)
    package = REPO / "faers_anon"
    modules = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))
    assert sorted(set(modules) - set(listed)) == [], "add one line per new module to docs/architecture.md"
    assert sorted(set(listed) - set(modules)) == [], "the map names modules that no longer exist"
    assert len(listed) == len(set(listed))


def test_the_top_level_holds_at_most_twelve_modules() -> None:
    top = [p.name for p in (REPO / "faers_anon").glob("*.py")]
    assert len(top) <= 12, sorted(top)
