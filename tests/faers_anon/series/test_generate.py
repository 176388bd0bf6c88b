"""The generated series links exactly the chosen follow-ups to earlier quarters (issue 14 item 7)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from faers_anon.series.generate import _relink, make_series


def _tables(caseids: list[str], versions: list[int]) -> dict[str, pl.DataFrame]:
    ids = [f"{c}{v}" for c, v in zip(caseids, versions, strict=True)]
    demo = pl.DataFrame({"primaryid": ids, "caseid": caseids, "caseversion": [str(v) for v in versions]})
    reac = pl.DataFrame({"primaryid": ids, "caseid": caseids, "pt": ["Nausea"] * len(ids)})
    return {"DEMO": demo, "REAC": reac, "DELETE": pl.DataFrame({"caseid": [caseids[0]]})}


def test_an_accidental_caseid_clash_takes_a_fresh_caseid() -> None:
    # Earlier quarters hold 100 (latest version 2) and 250. This quarter draws 100 again by accident
    # (an unrelated case, version 1) and 300; with follow = 0 nothing is chosen as a follow-up, so
    # 100 must move above every caseid seen (250, 300): 301, version 1, primaryid 3011, in every
    # table and on the DELETE list; 300 keeps its ids.
    seen = pl.DataFrame({"caseid": ["100", "250"], "version": [2, 1]})
    out = _relink(_tables(["100", "300"], [1, 4]), seen, 0.0, np.random.default_rng(0))
    assert out["DEMO"].rows() == [("3011", "301", "1"), ("3004", "300", "4")]
    assert out["REAC"].select("primaryid", "caseid").rows() == [("3011", "301"), ("3004", "300")]
    assert out["DELETE"].get_column("caseid").to_list() == ["301"]


def test_a_chosen_follow_up_goes_above_the_earlier_version() -> None:
    # follow = 1: case 300 (version 1) becomes a follow-up of the only earlier case, 100 (latest
    # version 2): caseid 100, version 1 + 2 = 3, primaryid 1003.
    seen = pl.DataFrame({"caseid": ["100"], "version": [2]})
    out = _relink(_tables(["300"], [1]), seen, 1.0, np.random.default_rng(0))
    assert out["DEMO"].rows() == [("1003", "100", "3")]
    assert out["DELETE"].get_column("caseid").to_list() == ["100"]


def test_only_follow_ups_share_caseids_with_earlier_quarters(tmp_path: Path) -> None:
    # A realistic 20k series (follow 0.2): every case of quarters 2 and 3 whose caseid an earlier
    # quarter holds is a follow-up, every version above the earlier latest; 20 % of the cases
    # (binomial sd 0.3 %). Before the fix accidental clashes were unrelated cases with their own
    # versions (2 % of a 100k quarter, 9-13 % of a 400k one).
    folders = make_series(20_000, tmp_path / "raw", quarters=3, follow=0.2, seed=0, shape="realistic")
    latest = pl.DataFrame(schema={"caseid": pl.Utf8, "earlier": pl.Int64})
    for i, folder in enumerate(folders):
        (demo_file,) = (folder / "ASCII").glob("DEMO*.txt")
        demo = pl.read_csv(demo_file, separator="$", infer_schema=False, quote_char=None).select(
            "caseid", pl.col("caseversion").cast(pl.Int64)
        )
        per_case = demo.group_by("caseid").agg(pl.col("caseversion").min().alias("first"), pl.len())
        linked = per_case.join(latest, on="caseid")
        if i:
            share = linked.height / per_case.height
            assert 0.19 < share < 0.21, share
            assert (linked.get_column("first") > linked.get_column("earlier")).all()
        now = demo.group_by("caseid").agg(pl.col("caseversion").max().alias("earlier"))
        latest = pl.concat([latest, now]).group_by("caseid").agg(pl.col("earlier").max())


_FIELDS = ("sex", "age", "wt")


def _ascii(path: Path) -> pl.DataFrame:
    frame = pl.read_csv(path, separator="$", infer_schema_length=0, quote_char=None,
                        truncate_ragged_lines=True)  # fmt: skip
    frame = frame.rename({c: c.strip().lower() for c in frame.columns})
    return frame.rename({"gndr_cod": "sex"}, strict=False)  # legacy AERS


def _agreement(demo: pl.DataFrame, drug: pl.DataFrame, reac: pl.DataFrame) -> dict[str, float]:
    """Over consecutive versions of each case: the share of later versions with the earlier one's sex,
    age and weight (missing equal to missing), and the shares of a later version's drug and reaction
    rows whose name was in the version before (pairs with rows on both sides)."""
    demo = demo.unique("primaryid").with_columns(pl.col("caseversion").cast(pl.Int64))
    prev = [pl.col(c).shift(1).over("caseid").alias(f"_{c}") for c in (*_FIELDS, "primaryid")]
    pairs = demo.sort("caseid", "caseversion").with_columns(prev).filter(pl.col("_primaryid").is_not_null())
    same = [(pairs[c].fill_null("") == pairs[f"_{c}"].fill_null("")).to_numpy() for c in _FIELDS]
    out: dict[str, float] = {c: float(s.mean()) for c, s in zip(_FIELDS, same, strict=True)}
    links = pairs.select("primaryid", pl.col("_primaryid").alias("earlier"))
    for name, items, column in (("drugs", drug, "drugname"), ("reactions", reac, "pt")):
        rows = items.select("primaryid", column)
        before = rows.rename({"primaryid": "earlier"}).join(links, on="earlier").drop("earlier")
        later = rows.join(links, on="primaryid").join(before.select("primaryid").unique(), on="primaryid")
        out[name] = later.join(before, on=["primaryid", column], how="semi").height / later.height
    return out


def _quarters(raws: list[Path]) -> tuple[pl.DataFrame, ...]:
    return tuple(pl.concat([_ascii(next((raw / "ASCII").glob(f"{t}*.txt"))) for raw in raws])
                 for t in ("DEMO", "DRUG", "REAC"))  # fmt: skip


def test_same_patient_follow_ups_agree_with_their_earlier_version_as_real_ones_do(
    shared_data: Path, tmp_path: Path
) -> None:
    # The real pairs: every version pair of the excerpts' multi-version caseids (their DEMO, DRUG and
    # REAC rows wherever they are); the generated: quarter 2's follow-ups against quarter 1's versions.
    samples = shared_data / "faers_samples"
    wanted = pl.read_csv(samples / "_index" / "multi_version_cases.txt", separator="$", infer_schema_length=0)
    ids = wanted.get_column("primaryid").implode()

    def real(table: str) -> pl.DataFrame:
        files = [f for f in samples.glob(f"*/ascii/*/{table}*") if f.suffix.lower() == ".txt"]
        frames = [_ascii(f) for f in files]
        kept = [f.filter(pl.col("primaryid").is_in(ids)) for f in frames if "primaryid" in f.columns]
        return pl.concat(kept, how="diagonal_relaxed")

    measured = _agreement(real("DEMO"), real("DRUG"), real("REAC"))
    assert 0.85 < measured["sex"] < 0.95 and 0.7 < measured["age"] < 0.82 and 0.7 < measured["drugs"] < 0.9
    same = make_series(5000, tmp_path / "s", quarters=2, seed=1, shape="realistic", followups="same-patient")
    generated = _agreement(*_quarters(same))
    for name, share in measured.items():
        assert abs(generated[name] - share) < 0.06, (name, generated[name], share)
    other = make_series(5000, tmp_path / "other", quarters=2, seed=1, shape="realistic")
    stress = _agreement(*_quarters(other))  # the stress model: another patient under the caseid
    assert stress["sex"] < 0.65 and stress["drugs"] < measured["drugs"] - 0.3
