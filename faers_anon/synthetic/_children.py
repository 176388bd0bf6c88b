"""The child tables DRUG, REAC, INDI, THER, OUTC and RPSR of a synthetic quarter (all Utf8 columns)."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.synthetic._cases import REPT_CODES, Cases, Reports
from faers_anon.synthetic._demo import dates, partial_dates, pick
from faers_anon.synthetic._items import PT_INDEX, Items, expand
from faers_anon.synthetic._shape import SMALL, Shape, vocabulary
from faers_anon.synthetic._vocab import UNKNOWN_INDICATION

__all__ = ["COLUMNS", "drug_tables", "reac_frame", "outc_frame", "rpsr_frame"]

COLUMNS: dict[str, tuple[str, ...]] = {
    "DRUG": (
        "primaryid",
        "caseid",
        "drug_seq",
        "role_cod",
        "drugname",
        "prod_ai",
        "val_vbm",
        "route",
        "dose_vbm",
        "cum_dose_chr",
        "cum_dose_unit",
        "dechal",
        "rechal",
        "lot_num",
        "exp_dt",
        "nda_num",
        "dose_amt",
        "dose_unit",
        "dose_form",
        "dose_freq",
    ),
    "REAC": ("primaryid", "caseid", "pt", "drug_rec_act"),
    "OUTC": ("primaryid", "caseid", "outc_cod"),
    "RPSR": ("primaryid", "caseid", "rpsr_cod"),
    "THER": ("primaryid", "caseid", "dsg_drug_seq", "start_dt", "end_dt", "dur", "dur_cod"),
    "INDI": ("primaryid", "caseid", "indi_drug_seq", "indi_pt"),
}
_ROUTES = {
    "oral": ("Oral", "Tablet"),
    "sc": ("Subcutaneous", "Solution for injection in pre-filled syringe"),
    "iv": ("Intravenous (not otherwise specified)", "Infusion, Solution"),
    "im": ("Intramuscular", "Injection"),
    "inh": ("Respiratory (inhalation)", "Inhalation powder"),
    "td": ("Transdermal", "Transdermal patch"),
    "sl": ("Sublingual", "Sublingual tablet"),
    "iu": ("Intrauterine", "Intrauterine delivery system"),
}
_FREQ_TEXT = {
    "QD": "1X/DAY",
    "BID": "2X/DAY",
    "TID": "3X/DAY",
    "QW": "1X/WEEK",
    "PRN": "AS NEEDED",
    "HS": "AT NIGHT",
}
_OUTCOMES = (("OT", 0.33), ("HO", 0.28), ("LT", 0.05), ("DS", 0.03), ("RI", 0.015), ("CA", 0.004))
I64 = NDArray[np.int64]


def _draw(rng: np.random.Generator, p: tuple[float, ...], n: int) -> I64:
    """Draw ``n`` category codes with weights ``p`` (normalized here)."""
    weights = np.asarray(p, dtype=np.float64)
    return rng.choice(weights.size, size=n, p=weights / weights.sum()).astype(np.int64)


def _masked(rng: np.random.Generator, share: float, n: int, codes: I64) -> I64:
    """``codes`` where a coin with probability ``share`` says so, else -1 (missing)."""
    return np.where(rng.random(n) < share, codes, -1)


def _drug_rows(drugs: Items, cases: Cases, rng: np.random.Generator, shape: Shape) -> pl.DataFrame:
    """Per-case drug rows with every DRUG column except the keys, plus indication and therapy columns."""
    DRUGS = vocabulary(shape).drugs  # noqa: N806 (the vocabulary's drug table)
    n = drugs.item.size
    d = drugs.item
    doses = [x.dose.split(" ") if x.dose else ["", ""] for x in DRUGS]
    variant = _draw(rng, (0.68, 0.14, 0.06, 0.07, 0.03, 0.02), n)
    first = np.r_[True, drugs.case[1:] != drugs.case[:-1]]
    role = np.where(first & (rng.random(n) < 0.97), 0, 1 + _draw(rng, (0.35, 0.6, 0.05), n))
    route = np.where(rng.random(n) < 0.65, d, np.where(rng.random(n) < 0.43, -2, -1))  # -2 Unknown, -1 blank
    dose_given = rng.random(n) < 0.45
    vbm_kind = np.where(rng.random(n) < 0.4, 0, np.where(rng.random(n) < 0.58, 1, -1))
    base = pl.DataFrame(
        [
            pick([x.name for x in DRUGS], d, "brand"),
            pick([x.prod_ai for x in DRUGS], d, "ai"),
            pick([a for a, _ in doses], d, "amount"),
            pick([u for _, u in doses], d, "unit"),
            pick([_FREQ_TEXT.get(x.freq, "UNK") for x in DRUGS], d, "freq_text"),
            pl.Series("variant", variant),
            pl.Series("vbm_kind", vbm_kind),
            pl.Series("dose_given", dose_given),
            pick(("PS", "SS", "C", "I"), role, "role_cod"),
            pick(
                [_ROUTES[x.route][0] for x in DRUGS] + ["Unknown"],
                np.where(route == -2, len(DRUGS), route),
                "route",
            ),
            pl.Series("cum", rng.integers(2, 4000, n)).cast(pl.Utf8),
            pl.Series("has_cum", rng.random(n) < 0.04),
            pick(
                ("U", "D", "Y", "N"), _masked(rng, 0.55, n, _draw(rng, (0.4, 0.35, 0.15, 0.1), n)), "dechal"
            ),
            pick(
                ("U", "D", "Y", "N"), _masked(rng, 0.45, n, _draw(rng, (0.6, 0.3, 0.05, 0.05), n)), "rechal"
            ),
            pick(tuple("ABCDHKLMPTW"), _masked(rng, 0.06, n, rng.integers(0, 11, n)), "lot_letter"),
            pl.Series("lot_digits", rng.integers(1000, 99999, n)).cast(pl.Utf8),
            pl.Series("exp_dt", 202500 + rng.integers(1, 13, n) + 100 * rng.integers(0, 4, n)).cast(pl.Utf8),
            pl.Series("has_exp", rng.random(n) < 0.01),
            pick(
                [
                    f"0{70000 + 7919 * i % 29999}" if x.name == x.prod_ai else str(20000 + 7919 * i % 80000)
                    for i, x in enumerate(DRUGS)
                ],
                _masked(rng, 0.4, n, d),
                "nda_num",
            ),
            pick([_ROUTES[x.route][1] for x in DRUGS], _masked(rng, 0.4, n, d), "dose_form"),
            pick([x.freq for x in DRUGS], _masked(rng, 0.35, n, d), "dose_freq"),
            _indications(d, rng, shape),
            pl.Series("_ther", rng.random(n) < 0.28),
            *_therapy(drugs.case, cases, rng),
        ]
    )
    variant_is = pl.col("variant")
    return base.select(
        "role_cod",
        pl.when(variant_is == 1)
        .then("ai")
        .when((variant_is == 2) & pl.col("amount").is_not_null())
        .then(pl.format("{} ({} {})", "brand", "amount", "unit"))
        .when(variant_is == 4)
        .then(pl.col("brand").str.to_titlecase())
        .when(variant_is == 5)
        .then(pl.format("{}.", "brand"))
        .otherwise("brand")
        .alias("drugname"),
        pl.when(variant_is.is_in([3, 4])).then(None).otherwise("ai").alias("prod_ai"),
        pl.when(variant_is == 4).then(pl.lit("2")).otherwise(pl.lit("1")).alias("val_vbm"),
        "route",
        pl.when(pl.col("vbm_kind") == 0)
        .then(pl.lit("UNK"))
        .when(pl.col("vbm_kind") == 1)
        .then(pl.format("{} {}, {}", "amount", "unit", "freq_text"))
        .alias("dose_vbm"),
        pl.when("has_cum").then("cum").alias("cum_dose_chr"),
        pl.when("has_cum").then("unit").alias("cum_dose_unit"),
        "dechal",
        "rechal",
        pl.concat_str("lot_letter", "lot_digits").alias("lot_num"),
        pl.when("has_exp").then("exp_dt").alias("exp_dt"),
        "nda_num",
        pl.when("dose_given").then("amount").alias("dose_amt"),
        pl.when("dose_given").then("unit").alias("dose_unit"),
        "dose_form",
        "dose_freq",
        "_indi_pt",
        "_ther",
        "_start_dt",
        "_end_dt",
        "_dur",
        "_dur_cod",
    )


def _indications(drug: I64, rng: np.random.Generator, shape: Shape) -> pl.Series:
    """One indication per drug row: a label indication, the unknown-indication filler, or none.

    Shares per drug row: small 55 % / 12 %; realistic 20.5 % / 13.7 % (FDA 2022Q4: 1.42 INDI rows per
    report against 4.15 drug rows, 40 % of them the filler).
    """
    terms = [x.indications.split("|") for x in vocabulary(shape).drugs]
    flat = [t for ts in terms for t in ts] + [UNKNOWN_INDICATION]
    count = np.array([len(ts) for ts in terms])
    offset = np.cumsum(count) - count
    chosen = offset[drug] + np.floor(rng.random(drug.size) * count[drug]).astype(np.int64)
    u = rng.random(drug.size)
    label, unknown = shape.label_indication, shape.label_indication + shape.unknown_indication
    return pick(flat, np.where(u < label, chosen, np.where(u < unknown, len(flat) - 1, -1)), "_indi_pt")


def _therapy(case: I64, cases: Cases, rng: np.random.Generator) -> tuple[pl.Series, ...]:
    """THER dates per drug row: start before the case's first receipt, partial dates, DAY/MON/YR durations."""
    n = case.size
    start = cases.init_dt[case] - (1 + np.minimum(rng.exponential(400.0, n), 5000.0)).astype(np.int64)
    has_end = rng.random(n) < 0.45
    days = 1 + np.minimum(rng.exponential(120.0, n), 4000.0).astype(np.int64)
    start_kind = _draw(rng, (0.75, 0.15, 0.10), n)
    start_s = partial_dates(dates(start, "_start_dt"), start_kind)
    end_s = partial_dates(dates(start + days - 1, "_end_dt"), np.where(has_end, 0, -1))
    given = has_end & (start_kind == 0) & (rng.random(n) < 0.6)
    unit = np.where(days >= 730, 2, np.where((days >= 60) & (rng.random(n) < 0.3), 1, 0))
    value = np.where(unit == 2, days // 365, np.where(unit == 1, days // 30, days))
    dur = pl.Series("_dur", value).cast(pl.Utf8)
    dur = pl.select(pl.when(pl.lit(pl.Series(given))).then(dur).alias("_dur")).to_series()
    return start_s, end_s, dur, pick(("DAY", "MON", "YR"), np.where(given, unit, -1), "_dur_cod")


def drug_tables(
    drugs: Items,
    cases: Cases,
    reports: Reports,
    keys: pl.DataFrame,
    rng: np.random.Generator,
    shape: Shape = SMALL,
) -> dict[str, pl.DataFrame]:
    """DRUG, INDI and THER for every report; ``keys`` holds each report's primaryid and caseid."""
    rows = _drug_rows(drugs, cases, rng, shape)
    drop_last = (~reports.latest) & (rng.random(reports.n) < 0.2)
    item_row, report, seq = expand(drugs, reports, cases.n, drop_last=drop_last)
    full = pl.concat(
        [keys[report], pl.Series("drug_seq", seq).cast(pl.Utf8).to_frame(), rows[item_row]], how="horizontal"
    )
    drug = full.select(COLUMNS["DRUG"])
    indi = full.filter(pl.col("_indi_pt").is_not_null()).select(
        "primaryid", "caseid", pl.col("drug_seq").alias("indi_drug_seq"), pl.col("_indi_pt").alias("indi_pt")
    )
    ther = full.filter(pl.col("_ther")).select(
        "primaryid",
        "caseid",
        pl.col("drug_seq").alias("dsg_drug_seq"),
        pl.col("_start_dt").alias("start_dt"),
        pl.col("_end_dt").alias("end_dt"),
        pl.col("_dur").alias("dur"),
        pl.col("_dur_cod").alias("dur_cod"),
    )
    return {"DRUG": drug, "INDI": indi, "THER": ther}


def reac_frame(
    reactions: Items,
    cases: Cases,
    reports: Reports,
    keys: pl.DataFrame,
    rng: np.random.Generator,
    shape: Shape = SMALL,
) -> tuple[pl.DataFrame, NDArray[np.bool_]]:
    """REAC for every report, and per report whether it lists ``Death``."""
    REACTIONS = vocabulary(shape).reactions  # noqa: N806 (the vocabulary's PTs)
    drop_last = (~reports.latest) & (rng.random(reports.n) < 0.4)
    item_row, report, _ = expand(reactions, reports, cases.n, drop_last=drop_last)
    pt = reactions.item[item_row]
    death = np.zeros(reports.n, dtype=bool)
    death[report[pt == PT_INDEX["Death"]]] = True
    frame = pl.concat(
        [
            keys[report],
            pl.DataFrame(
                [
                    pick(REACTIONS, pt, "pt"),
                    pick(REACTIONS, _masked(rng, 0.005, pt.size, pt), "drug_rec_act"),
                ]
            ),
        ],
        how="horizontal",
    )
    return frame, death


def outc_frame(
    reports: Reports, death: NDArray[np.bool_], keys: pl.DataFrame, rng: np.random.Generator
) -> pl.DataFrame:
    """OUTC: independent outcome codes per report, DE for reports listing Death (and 0.5 % others)."""
    codes = ["DE", *(c for c, _ in _OUTCOMES)]
    p = np.array([0.0, *(q for _, q in _OUTCOMES)])
    has = rng.random((reports.n, len(codes))) < p
    has[:, 0] = death | (rng.random(reports.n) < 0.005)
    report, code = np.nonzero(has)
    return pl.concat([keys[report], pick(tuple(codes), code, "outc_cod").to_frame()], how="horizontal")


def rpsr_frame(cases: Cases, reports: Reports, keys: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """RPSR: sparse report sources, mostly on direct reports (consumer or health professional)."""
    direct = cases.rept[reports.case] == REPT_CODES.index("DIR")
    report = np.flatnonzero(rng.random(reports.n) < np.where(direct, 0.6, 0.03))
    code = pick(("CSM", "HP", "FGN"), _draw(rng, (0.55, 0.4, 0.05), report.size), "rpsr_cod")
    return pl.concat([keys[report], code.to_frame()], how="horizontal")
