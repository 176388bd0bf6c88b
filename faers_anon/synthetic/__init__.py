"""Synthetic FAERS quarters in the modern (2014Q3+) ASCII layout, and the bundled demo quarter.

``make_quarter(n_cases, seed=..., quarter="2025Q1", shape="small")`` draws a quarter in memory (string
frames in FAERS column order); ``shape="realistic"`` draws one whose vocabularies (7,500 drugs, 7,300
PTs, 2,000 indications, 670 senders), Zipf–Mandelbrot laws, per-report counts, follow-ups,
missingness and dates are fitted to real FAERS (``_shape.REALISTIC``; docs/synthetic.md,
``scripts/fit_synthetic.py``). The shapes below are the default small shape's.
``write_quarter(tables, out_dir, zip=True)`` writes a quarter as FDA does (``ASCII/DEMO25Q1.txt`` …,
``Deleted/DELETE25Q1.txt``, optionally inside ``faers_ascii_2025q1.zip``).
The same seed gives byte-identical files. ``demo_zip()`` is the bundled demo quarter
(``faers_anon/data/demo``, zip and ``demo_readme`` text, made by ``scripts/make_demo_quarter.py``).
Decision: the brief's "~4.5 drug and ~3.4 reaction rows" are per *case* (the totals it names for
400,000 cases); per report they are ~3.9 and ~2.9.

Shapes (FAERS-like, all from a hand-written vocabulary of ~150 drugs and ~150 PTs in ``_vocab``):

* ~1.17 reports per case: versions 1, 2, 3 of a case may share the quarter; many cases only have a
  late follow-up in it (caseversion up to ~30). Earlier versions may lack the age (filled in by the
  follow-up), carry a weight the follow-up corrects, say UNK sex, or lack the last drug or reaction.
* per case ~4.5 DRUG rows and ~3.4 REAC rows over its reports (400,000 cases → ~1.8 M and ~1.35 M);
  INDI for ~two thirds of drug rows (12 % "Product used for unknown indication"), THER for ~28 %,
  OUTC for about half of the reports (DE whenever the report lists Death), RPSR sparse.
* missing: weight in ~75 % of reports, age in ~1/3, sex UNK or blank in ~10 %. Ages mostly YR, infants
  in MON/WK/DY/HR, a few adults in DEC or DY; weights mostly KG, ~12 % LBS. Implausible: one report in
  2,500 (at least one) has age 150 YR, another weight 900 KG.
* drug names: mostly brand + ``prod_ai``; also the ingredient as drugname, dose text in parentheses
  ("AVANDIA (4 MG)"), a trailing period, brand only with ``prod_ai`` blank, or a verbatim mixed-case
  brand (``val_vbm`` 2). Drug choice depends on true age and sex (``_vocab.PROFILES``).

Planted signals (``PLANTED_SIGNALS``; stratum from the latest version's reported sex and age):

===========  ==========================================  =============  =====================================
drug         event                                       stratum        how
===========  ==========================================  =============  =====================================
AVANDIA      Myocardial infarction                       age >= 18      added to 30 % of drug cases inside
AVANDIA      Death                                       age >= 18      25 %
AVANDIA      Cerebrovascular accident                    age >= 18      25 %
TYSABRI      Progressive multifocal leukoencephalopathy  age >= 18      30 %
ZELNORM      Cerebrovascular accident                    sex = F        30 %
WARFARIN     Myocardial infarction                       age >= 60      25 %
REVATIO      Death                                       age < 18       40 %
AMBIEN       Fall                                        F, age >= 65   35 % inside; every background Fall
                                                                        of other AMBIEN cases redrawn, so
                                                                        PRR < 2 over all cases
===========  ==========================================  =============  =====================================

The first seven are the MedWatch rules of Lin et al. 2016, Table 5. ``check_signals(tables)`` computes
their a, b, c, d, PRR and χ² per stratum and overall.

Malformed rows (``MALFORMED_KINDS``, with ``malformed=True``, one of each, appended at the end of their
table as fresh caseids above every generated one): a DEMO row with 26 fields (embedded ``$`` in
mfr_num), a DEMO row with a non-numeric primaryid, an exact duplicate of an existing DEMO row, a DEMO
row with age_cod ``YRS``, and one DRUG and one REAC row of a report that has no DEMO row. The DELETE
list names ~1 in 1,000 of the quarter's caseids (at least 3, none taking a planted drug) and one caseid
absent from the quarter; like FDA's files it starts with a line holding one space.
"""

from __future__ import annotations

from pathlib import Path

from faers_anon._paths import bundled
from faers_anon.synthetic._check import check_signals, latest_cases
from faers_anon.synthetic._plan import MALFORMED_KINDS, PLANTED_SIGNALS, PlantedSignal, Quarter
from faers_anon.synthetic._quarter import TABLES, make_quarter
from faers_anon.synthetic._readme import demo_readme
from faers_anon.synthetic._shape import REALISTIC, SHAPES, SMALL, Shape
from faers_anon.synthetic._write import quarter_files, write_quarter, zip_name

__all__ = [
    "DEMO_CASES",
    "DEMO_QUARTER",
    "DEMO_SEED",
    "MALFORMED_KINDS",
    "PLANTED_SIGNALS",
    "TABLES",
    "PlantedSignal",
    "Quarter",
    "REALISTIC",
    "SHAPES",
    "SMALL",
    "Shape",
    "check_signals",
    "demo_readme",
    "demo_zip",
    "latest_cases",
    "make_quarter",
    "quarter_files",
    "write_quarter",
    "zip_name",
]

DEMO_CASES = 3000
DEMO_SEED = 20250101
DEMO_QUARTER = "2025Q1"


def demo_zip() -> Path:
    """Path of the bundled demo quarter zip (``faers_anon/data/demo/faers_ascii_2025q1.zip``)."""
    return bundled("demo", zip_name(DEMO_QUARTER))
