"""Append the documented malformed rows (``MALFORMED_KINDS``) to a quarter's tables."""

from __future__ import annotations

import polars as pl

__all__ = ["add_malformed"]


def _row_like(frame: pl.DataFrame, index: int, **changes: str | None) -> pl.DataFrame:
    """One row of ``frame`` (all Utf8) with some fields replaced."""
    row = frame.row(index, named=True)
    row.update(changes)
    return pl.DataFrame([row], schema=frame.schema)


def add_malformed(tables: dict[str, pl.DataFrame], *, next_caseid: int) -> dict[str, pl.DataFrame]:
    """Append one row of each malformed kind; fresh rows use caseids ``next_caseid`` .. ``next_caseid + 3``.

    In file order at the end of DEMO: the 26-field row (caseid n), the non-numeric primaryid (n + 1),
    the exact copy of the middle DEMO row, the unknown age_cod (n + 2). DRUG and REAC each end with one
    row of report ``(n + 3) ‖ 1``, which has no DEMO row.
    """
    demo = tables["DEMO"]
    ids = [str(next_caseid + i) for i in range(4)]
    received = str(demo.get_column("fda_dt").max())

    def fresh(caseid: str, primaryid: str, **changes: str | None) -> pl.DataFrame:
        """A new case's initial report, shaped like the first DEMO row."""
        new = {"primaryid": primaryid, "caseid": caseid, "caseversion": "1", "i_f_code": "I"}
        dates = {"init_fda_dt": received, "fda_dt": received, "rept_dt": received, "mfr_dt": received}
        sender = {"mfr_num": f"US-PFIZER INC-{caseid}", "mfr_sndr": "PFIZER"}
        return _row_like(demo, 0, **{**new, **dates, **sender, **changes})

    rows = [
        fresh(ids[0], ids[0] + "1", mfr_num="JP-CUBIST-$E2B" + ids[0], mfr_sndr="CUBIST"),
        fresh(ids[1], ids[1][:4] + "X" + ids[1][5:] + "1"),
        demo.slice(demo.height // 2, 1),
        fresh(ids[2], ids[2] + "1", age="45", age_cod="YRS"),
    ]
    out = dict(tables)
    out["DEMO"] = pl.concat([demo, *rows])
    orphan = {"primaryid": ids[3] + "1", "caseid": ids[3]}
    out["DRUG"] = pl.concat(
        [tables["DRUG"], _row_like(tables["DRUG"], 0, drug_seq="1", role_cod="PS", **orphan)]
    )
    out["REAC"] = pl.concat(
        [tables["REAC"], _row_like(tables["REAC"], 0, pt="Nausea", drug_rec_act=None, **orphan)]
    )
    return out
