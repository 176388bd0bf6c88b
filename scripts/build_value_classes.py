"""Build the bundled value-class file ``faers_anon/data/value_classes.csv`` from FAERS terms.

The classes (issue 18, SPEC §11 "value class"): cancer, hiv, mental_health, pregnancy, substance_use.
Members are the MedDRA PTs *as they appear in FAERS* REAC ``pt`` / INDI ``indi_pt`` (the bundled demo
quarter and the public excerpts under ``../shared/data/faers_samples``), chosen by the keyword rules
below (an include pattern, minus an exclude pattern per class); the output lists the terms, not the
data. A licensed MedDRA hierarchy gives a better file (an SMQ or HLGT per class): pass it with
``--classes``. Usage: ``python scripts/build_value_classes.py [SAMPLES_DIR] > value_classes.csv``.
"""

from __future__ import annotations

import io
import re
import sys
import zipfile
from pathlib import Path

import polars as pl

INCLUDE = {
    "cancer": r"CARCINOMA|CANCER|MALIGNAN|LYMPHOMA|LEUKAEMIA|LEUKEMIA|MELANOMA|SARCOMA|MYELOMA|METASTA|"
    r"GLIOBLASTOMA|GLIOMA|BLASTOMA|MESOTHELIOMA|ADENOCARCINOMA|MYELODYSPLASTIC|CHEMOTHERAPY",
    "hiv": r"\bHIV\b|ACQUIRED IMMUNODEFICIENCY|AIDS RELATED|ANTIRETROVIRAL",
    "mental_health": r"DEPRESSI|SUICID|SCHIZOPHREN|BIPOLAR|PSYCHOS|PSYCHOTIC|ANXIETY|PANIC|OBSESSIVE|"
    r"POST-TRAUMATIC STRESS|EATING DISORDER|ANOREXIA NERVOSA|BULIMIA|SELF-INJUR|PERSONALITY DISORDER|"
    r"MANIA|ATTENTION DEFICIT|MENTAL DISORDER|AUTISM",
    "pregnancy": r"PREGNAN|ABORTION|MISCARRIAGE|FOETAL|FETAL|FOETUS|PREMATURE BABY|PREMATURE DELIVERY|"
    r"STILLBIRTH|LABOUR|CAESAREAN|GESTATION|ECLAMPSIA|POSTPARTUM|NEONATAL|CONTRACEPTI|IN VITRO FERTILI|"
    r"INFERTILITY|BREAST FEEDING",
    "substance_use": r"ALCOHOL ABUSE|ALCOHOLISM|ALCOHOL POISONING|DRUG ABUSE|SUBSTANCE|DEPENDENCE|ADDICTION|"
    r"INTENTIONAL OVERDOSE|DRUG WITHDRAWAL|^WITHDRAWAL SYNDROME|DRUG DIVERSION|INTENTIONAL PRODUCT MISUSE|"
    r"TOBACCO|SMOKING|NICOTINE DEPENDENCE|CANNABIS|COCAINE|HEROIN|METHAMPHETAMINE|OPIOID USE",
}
EXCLUDE = {
    "cancer": r"NON-MALIGNANT|BENIGN|PROPHYLAXIS",
    "mental_health": r"RESPIRATORY DEPRESSION|CNS DEPRESSION|MYOCARDIAL DEPRESS|DEPRESSED LEVEL|"
    r"BONE MARROW DEPRESSION|ST SEGMENT DEPRESSION|IMMUNODEPRESS|LEUKAEMIA",
    "substance_use": r"INDEPENDENCE|STEROID|DEPENDENCE ON|OXYGEN DEPENDENCE",
}


def _terms(frame: pl.DataFrame) -> set[str]:
    columns = [c for c in frame.columns if c.lower() in ("pt", "indi_pt")]
    return {t.strip().upper() for c in columns for t in frame[c].drop_nulls().to_list() if t.strip()}


def read_terms(samples: Path | None) -> set[str]:
    """Distinct PTs of the bundled demo quarter and of every REAC/INDI file under ``samples``."""
    read = {"separator": "$", "infer_schema": False, "quote_char": None, "truncate_ragged_lines": True}
    terms: set[str] = set()
    demo = Path(__file__).resolve().parents[1] / "faers_anon" / "data" / "demo" / "faers_ascii_2025q1.zip"
    with zipfile.ZipFile(demo) as archive:
        for name in archive.namelist():
            if re.search(r"(REAC|INDI)\w*\.txt$", name, re.IGNORECASE):
                terms |= _terms(pl.read_csv(io.BytesIO(archive.read(name)), **read))  # type: ignore[arg-type]
    for path in sorted(samples.rglob("*")) if samples else []:
        if re.fullmatch(r"(REAC|INDI)\d\dQ\d\.txt", path.name, re.IGNORECASE) and "ascii" in path.parts:
            terms |= _terms(pl.read_csv(path, encoding="utf8-lossy", **read))  # type: ignore[arg-type]
    return terms


def classify(terms: set[str]) -> list[tuple[str, str]]:
    """(value, class) for every term an include pattern matches and its class's exclude does not."""
    rows = []
    for term in sorted(terms):
        for name, pattern in INCLUDE.items():
            if re.search(pattern, term) and not re.search(EXCLUDE.get(name, "$^"), term):
                rows.append((term, name))
    return rows


def main() -> None:
    samples = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    print("# Value classes of SPEC §11 (issue 18): value,class[,theta]; '*,<class>,<theta>' sets a class's θ")
    print("# (default: the release's θ). Built by scripts/build_value_classes.py from PTs as they appear in")
    print("# FAERS (demo quarter and public excerpts) by keyword rules; replace it with a MedDRA-based file.")
    print("value,class,theta")
    for value, name in classify(read_terms(samples)):
        print(f'"{value}",{name},')


if __name__ == "__main__":
    main()
