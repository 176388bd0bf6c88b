"""The agency's private release ledger: what each release of a series published about each case.

Source: issue 14 item 2; SPEC §11 "Composition". The ledger is the agency's, like its key: it is never
published and never inside a release folder (:func:`check_apart`).

Layout of the ledger folder ``DIR``:

* ``release-NNNN.parquet`` (one per release, NNNN = 1, 2, …), one row per case pseudonym published:
  ``caseid`` (the case pseudonym, :mod:`faers_anon.release.pseudonyms`: the same key gives the same pseudonym
  in every release), ``group`` (the index of its QID-group in that release: the cases sharing the
  whole released QID tuple, ``age_group, age_min, age_max, sex, wt_min, wt_max`` and every other
  DEMO QID of the manifest's ``columns.demo.qid``, as the verifier groups them: the finest grouping
  an attacker reads), the six standard columns of that tuple (the group's released region),
  ``group_size``, ``reports`` (its report pseudonyms published), and the sensitive
  values it exposed there: ``reactions``, ``indications`` (canonical value keys, as ``thresholds.csv``
  names them), ``drug_keys`` (the diseases of E are read through its drugs) and ``outcomes`` (OUTC
  codes, bounded by θ as pseudo-values: :mod:`faers_anon.anonymize.value_classes`). The group's member
  pseudonyms are the rows sharing ``group``.
* ``state-NNNN.parquet``: the current state after release NNNN, one row per case pseudonym ever
  published (its history, last region, every value it exposed): what the next release reads
  (:mod:`faers_anon.series.state`), so a release reads one file whatever the series' length.
* ``store-NNNN/``: the ingested tables release NNNN was written from (raw rows, to republish a
  unit's members: :mod:`faers_anon.series.store`).
* ``ledger.json``: ``format`` (``faers-anon-ledger/1``), ``key_id`` (the agency key's id), and per
  release its ``quarters``, the release folder and the SHA-256 of its ``manifest.json``, its file and
  that file's SHA-256, its state file and its SHA-256, its store's files and their SHA-256, counts
  (``cases``, ``groups``, ``withheld``, and ``series``: the placement's counts, withheld,
  republished and retried reports included); then ``mac``:
  HMAC-SHA256(K_l, the canonical JSON of everything else), K_l = HMAC-SHA256(K_p,
  ``faers-anon/v1/ledger``) with K_p the pseudonym key. So a changed byte of any file, a removed
  file or release, or another key is detected; only the key's holder can write a ledger that checks.

Checks on open (:func:`open_ledger`), each one ``Error:`` line: another agency key (``key_id``
differs), a tampered or corrupt file (the MAC or the last state file's SHA-256 differs, a file
missing; a release or store file when it is read, :func:`faers_anon.series.store.checked_file`), and
on release (:meth:`Ledger.check_next`) a quarter that does not follow the ledger's last one (an
earlier quarter missing, or a quarter already released).

Both or neither (:class:`Staged`): the release's entries file and the new ``ledger.json`` are written
under temporary names first; the release is published (one rename); then ``ledger.json`` is replaced
(one ``os.replace``). A failure before the release's rename leaves neither; a failure of the
ledger's replace removes the just-published release again. A crash between the two renames leaves a
release the ledger does not list: the next quarter is then refused as "missing" (the operator
re-runs that quarter with ``--force``), never silently composed without it.
"""

from __future__ import annotations

import hmac
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.anonymize.partition import QID_COLUMNS
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.cumulative import quarter_gaps
from faers_anon.keys import AgencyKey
from faers_anon.release.manifest import MANIFEST_NAME, sha256_file
from faers_anon.series.state import advance, history, state_from_entries
from faers_anon.series.store import write_store
from knowledge.values import value_key_expr

__all__ = [
    "LEDGER_FORMAT", "REGION", "Ledger", "Staged", "check_apart", "history", "ledger_entries", "open_ledger",
]  # fmt: skip

LEDGER_FORMAT = "faers-anon-ledger/1"
LEDGER_NAME = "ledger.json"
#: The released QID tuple that defines a group (as faers_anon.risk and the verifier read it).
REGION: tuple[str, ...] = QID_COLUMNS
_LISTS = {"reac": ("pt", "reactions"), "indi": ("indi_pt", "indications"), "drug": ("drug_key", "drug_keys"),
          "outc": ("outc_cod", "outcomes")}  # fmt: skip
_CANONICAL = {"pt", "indi_pt"}  # value keys as thresholds.csv and P(s | c) name them
_SCHEMA: dict[str, pl.DataType] = {
    "release": pl.UInt32(), "caseid": pl.Int64(), "group": pl.UInt32(), "age_group": pl.Utf8(),
    "age_min": pl.Float64(), "age_max": pl.Float64(), "sex": pl.Utf8(), "wt_min": pl.Float64(),
    "wt_max": pl.Float64(), "group_size": pl.UInt32(), "reports": pl.List(pl.Int64),
    "reactions": pl.List(pl.Utf8), "indications": pl.List(pl.Utf8), "drug_keys": pl.List(pl.Utf8),
    "outcomes": pl.List(pl.Utf8),
}  # fmt: skip


def _mac_key(key: AgencyKey) -> bytes:
    return hmac.digest(key.pseudonym_key, b"faers-anon/v1/ledger", "sha256")


def _mac(meta: dict[str, Any], key: AgencyKey) -> str:
    body = json.dumps({k: v for k, v in meta.items() if k != "mac"}, sort_keys=True, separators=(",", ":"))
    return hmac.new(_mac_key(key), body.encode("utf-8"), "sha256").hexdigest()


def _fail(folder: Path, what: str) -> InputError:
    return InputError(f"ledger {what}", path=folder)


@dataclass(frozen=True, slots=True)
class Ledger:
    """An opened, checked ledger.

    Attributes:
        path: the ledger folder.
        meta: the content of ``ledger.json`` (``releases`` empty for a new ledger).
        state: the current state, one row per case pseudonym published so far
            (:data:`faers_anon.series.state.STATE_SCHEMA`).
    """

    path: Path
    meta: dict[str, Any]
    state: pl.DataFrame = field(repr=False)

    def read_entries(self) -> pl.DataFrame:
        """Every release's rows (:data:`_SCHEMA`; ``release`` = its index, from 1), each file checked."""
        return _read_entries(self.path, self.meta)

    @property
    def quarters(self) -> list[str]:
        """Every quarter released so far, in order."""
        return [q for r in self.meta["releases"] for q in r["quarters"]]

    def check_next(self, quarters: list[str]) -> None:
        """Refuse a release whose quarters do not directly follow the ledger's last quarter.

        Raises:
            InputError: a quarter already in the ledger, or an earlier quarter missing.
        """
        done = self.quarters
        again = sorted(set(quarters) & set(done))
        if again:
            raise _fail(self.path, f"already lists {', '.join(again)} (released before; a ledger "
                        "records each quarter once)")  # fmt: skip
        if done:
            gaps = quarter_gaps([done[-1], *quarters])
            if gaps or min(quarters) < done[-1]:
                missing = ", ".join(gaps) if gaps else f"quarters after {min(quarters)}"
                raise _fail(self.path, f"ends at {done[-1]}: release {missing} first (earlier quarter "
                            f"missing before {min(quarters)})")  # fmt: skip


def _new(folder: Path, key: AgencyKey) -> Ledger:
    meta: dict[str, Any] = {"format": LEDGER_FORMAT, "key_id": key.key_id, "releases": []}
    return Ledger(folder, meta, state_from_entries(pl.DataFrame(schema=_SCHEMA)))


def _checked(folder: Path, name: str, digest: str, what: str) -> Path:
    file = folder / name
    if not file.is_file():
        raise _fail(folder, f"{name} missing (listed for {what})")
    if sha256_file(file) != digest:
        raise _fail(folder, f"{name}: SHA-256 mismatch: tampered or corrupt")
    return file


def _read_entries(folder: Path, meta: dict[str, Any]) -> pl.DataFrame:
    frames = [
        pl.read_parquet(_checked(folder, r["file"], r["sha256"], ", ".join(r["quarters"])))
        for r in meta["releases"]
    ]
    entries = pl.concat(frames) if frames else pl.DataFrame(schema=_SCHEMA)
    return entries.cast(_SCHEMA)  # type: ignore[arg-type]


def _read_state(folder: Path, meta: dict[str, Any]) -> pl.DataFrame:
    """The last release's state file (checked); rebuilt from the release files when it has none."""
    if not meta["releases"]:
        return state_from_entries(pl.DataFrame(schema=_SCHEMA))
    last = meta["releases"][-1]
    if "state" not in last:  # a ledger written before the state file
        return state_from_entries(_read_entries(folder, meta))
    return pl.read_parquet(_checked(folder, last["state"], last["state_sha256"], ", ".join(last["quarters"])))


def open_ledger(folder: Path, key: AgencyKey, /) -> Ledger:
    """Open and check the ledger in ``folder`` (a folder that does not exist or is empty: a new one).

    Raises:
        InputError: not a ledger, another key, a tampered, corrupt or missing file.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise _fail(folder, "is a file (expected a ledger folder)")
    if not folder.exists() or not any(folder.iterdir()):
        return _new(folder, key)
    path = folder / LEDGER_NAME
    if not path.is_file():
        raise _fail(folder, f"folder holds no {LEDGER_NAME} (not a ledger; give an empty or new folder)")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _fail(folder, f"{LEDGER_NAME} unreadable ({exc}): tampered or corrupt") from exc
    if not isinstance(meta, dict) or meta.get("format") != LEDGER_FORMAT:
        raise _fail(folder, f"{LEDGER_NAME}: format is not {LEDGER_FORMAT}")
    if meta.get("key_id") != key.key_id:
        raise _fail(folder, f"was written with another agency key (key id {meta.get('key_id')}, this key "
                    f"{key.key_id}): a series keeps one key")  # fmt: skip
    if not hmac.compare_digest(str(meta.get("mac", "")), _mac(meta, key)):
        raise _fail(folder, f"{LEDGER_NAME}: checksum (MAC) mismatch: tampered or corrupt")
    return Ledger(folder, meta, _read_state(folder, meta))  # other files are checked when read


def check_apart(ledger: Path, release: Path, /) -> None:
    """Refuse a ledger inside the release folder (it would be published) or a release inside it.

    Raises:
        ConfigError: one lies inside the other.
    """
    a, b = Path(ledger).resolve(), Path(release).resolve()
    if a == b or a.is_relative_to(b) or b.is_relative_to(a):
        raise ConfigError(f"ledger {ledger} and release {release} overlap: the ledger is never published "
                          "(keep it outside the release folder)")  # fmt: skip


def _published_qids(release: Path) -> list[str]:
    """Every QID column the release's manifest lists for DEMO (``columns.demo.qid``), extras included."""
    manifest = json.loads((release / MANIFEST_NAME).read_text(encoding="utf-8"))
    return list(manifest.get("columns", {}).get("demo", {}).get("qid", []))


def _values(path: Path, column: str, name: str) -> pl.DataFrame:
    """``caseid`` and ``name``: each case's distinct values of ``column`` in the table file ``path``, sorted
    (canonical value keys where ``column`` names values, :data:`_CANONICAL`; a blank term's key is null,
    sorted first), the cases in ``caseid`` order.

    Every (case, value) pair is one unsigned integer: the case's place among the table's sorted case
    pseudonyms times the number of values, plus the value's place among the sorted distinct values (a
    term's key computed once per distinct term: the regex of ``value_key_expr`` on every row cost 5 s
    of 13 on a 100k release). One sort of those integers and a comparison with the next one give the
    distinct pairs in (case, value) order, and the cases and values are put back by their places: at the
    400k series' quarter 4 the reactions (1.97 M rows) 1.05 -> 0.2 CPU-s against the distinct rows of
    (caseid, number) sorted, twice that against the strings themselves."""
    rows = pl.read_parquet(path, columns=["caseid", column]).drop_nulls()
    terms = rows.get_column(column).unique().sort()
    keys = pl.select(value_key_expr(pl.lit(terms)) if column in _CANONICAL else pl.lit(terms)).to_series()
    vocab = keys.drop_nulls().unique().sort()
    blank = int(keys.null_count() > 0)  # a blank term's null key: place 0, before every key
    place = (vocab.search_sorted(keys.fill_null("")).cast(pl.UInt64) + blank) * keys.is_not_null().cast(
        pl.UInt64
    )
    vocab = pl.concat([pl.Series([None], dtype=pl.Utf8), vocab]) if blank else vocab
    term = rows.select(column).join(pl.DataFrame({column: terms}).with_row_index("_t"), on=column,
                                    how="left", maintain_order="left")  # fmt: skip
    cases = rows.get_column("caseid").unique().sort()
    size = max(len(vocab), 1)
    pairs = (
        cases.search_sorted(rows.get_column("caseid")).cast(pl.UInt64) * size
        + place.gather(term.get_column("_t"))
    ).sort()
    pairs = pairs.filter(pairs.diff().fill_null(1) != 0)
    listed = pl.DataFrame(
        {"caseid": cases.gather(pairs // size).set_sorted(), name: vocab.gather(pairs % size)}
    )
    return listed.group_by("caseid", maintain_order=True).agg(name)  # sorted keys: one pass


def _cases(demo: pl.DataFrame, tuple_: list[str]) -> pl.DataFrame:
    """One row per case of ``demo`` in ``caseid`` order: its QID tuple (its first row's), ``reports`` (its
    report pseudonyms, distinct, sorted) and ``group``, the place of its tuple among the release's
    distinct tuples sorted (``pl.struct(tuple_).rank("dense")``, ranked over the distinct tuples, not
    every case). The rows sorted (stable) by case and the (case, report) pairs sorted give each case's tuple
    and its distinct reports in one pass over sorted keys: at the 400k series' quarter 4 (609,515 reports,
    589,867 cases, 49,505 groups) 0.77 -> 0.24 CPU-s against a hash group-by, the groups 0.60 -> 0.27."""
    demo = demo.sort("caseid", maintain_order=True)  # stable: a case's first report as in the file
    pairs = demo.select("caseid", "primaryid").sort("caseid", "primaryid")
    ids, reports = pairs.get_column("caseid"), pairs.get_column("primaryid")
    distinct = pairs.filter(ids.is_first_distinct() | (reports != reports.shift(1)).fill_null(True))
    reports_of = distinct.select(pl.col("caseid").set_sorted(), pl.col("primaryid").alias("reports"))
    cases = demo.filter(demo.get_column("caseid").is_first_distinct()).select(
        pl.col("caseid").set_sorted(), *tuple_
    )
    listed = reports_of.group_by("caseid", maintain_order=True).agg("reports")
    cases = cases.with_columns(listed.get_column("reports"))
    rows = cases.select(tuple_).with_row_index("_row").group_by(tuple_).agg("_row")
    group = rows.select((pl.struct(tuple_).rank("dense") - 1).cast(pl.UInt32).alias("group"), "_row")
    return cases.with_columns(group.explode("_row").sort("_row").get_column("group"))


def ledger_entries(release: Path, index: int, /) -> pl.DataFrame:
    """The ledger rows of the release folder ``release``: one per case pseudonym (module docstring)."""
    demo_path = release / "parquet" / "demo.parquet"
    present = pl.read_parquet_schema(demo_path)
    region = [c for c in REGION if c in present]
    tuple_ = [c for c in dict.fromkeys([*region, *_published_qids(release)]) if c in present]
    demo = pl.read_parquet(demo_path, columns=list(dict.fromkeys(["caseid", "primaryid", *tuple_])))
    cases = _cases(demo, tuple_).with_columns(pl.len().over("group").cast(pl.UInt32).alias("group_size"))
    for table, (column, name) in _LISTS.items():
        path = release / "parquet" / f"{table}.parquet"
        values = (
            _values(path, column, name)
            if path.is_file() else pl.DataFrame(schema={"caseid": pl.Int64, name: pl.List(pl.Utf8)})
        )  # fmt: skip
        cases = cases.join(values, on="caseid", how="left", maintain_order="left").with_columns(
            pl.col(name).fill_null(pl.lit([], pl.List(pl.Utf8)))
        )
    missing = [pl.lit(None, _SCHEMA[c]).alias(c) for c in REGION if c not in region]
    return (
        cases.with_columns(*missing, pl.lit(index, pl.UInt32).alias("release"))
        .select(list(_SCHEMA))
        .cast(_SCHEMA)  # type: ignore[arg-type]
        .sort("caseid")  # sorted already (the cases' order): checked, not sorted again
    )


@dataclass(slots=True)
class Staged:
    """A release's ledger update written under temporary names, to commit after the release's rename."""

    ledger: Ledger
    meta: dict[str, Any]
    file: Path
    temp: Path
    store: Path | None = None
    state: Path | None = None

    def commit(self) -> None:
        """Replace ``ledger.json`` (one ``os.replace``)."""
        os.replace(self.temp, self.ledger.path / LEDGER_NAME)

    def abort(self) -> None:
        """Remove what :func:`stage` wrote (the old ledger is untouched)."""
        for path in (self.temp, self.file, self.state):
            if path is not None:
                path.unlink(missing_ok=True)
        if self.store is not None:
            shutil.rmtree(self.store, ignore_errors=True)


def check_republish(ledger: Ledger, republish: bool, /) -> None:
    """Refuse a release whose ``republish`` setting differs from the series' (docs/series.md §4).

    The guarantee against an attacker who knows when the target's reports came in rests on every
    member of an intersection showing a new report wherever the others do; one release made the other
    way breaks it for every history through that release. A record without the key was made before the
    setting existed, with republished companions.

    Raises:
        InputError: an earlier release of the ledger made with the other setting (one Error line).
    """
    for record in ledger.meta["releases"]:
        earlier = bool(record.get("republish", True))
        if earlier != republish:
            made = "with" if earlier else "without"
            asked = "with" if republish else "without"
            raise InputError(
                f"release {record['index']} of this series was made {made} republish; this release asks "
                f"{asked}: a series keeps one setting (docs/series.md §4, 'Knowing when a report came in'). "
                "Use the series' setting or start a new ledger",
                path=ledger.path,
            )


def stage(ledger: Ledger, built: Path, out: Path, quarters: list[str], key: AgencyKey, *,
          withheld: int = 0, ingested: Path | None = None, series: dict[str, int] | None = None,
          pending: Path | None = None, ids: pl.DataFrame | None = None,
          cases: Path | None = None, republish: bool = False) -> Staged:  # fmt: skip
    """Write the entries of the release ``built`` (to be published as ``out``), the next state and
    ledger.json; with ``ingested`` (the folder the release was written from) its tables go to the
    store (:mod:`faers_anon.series.store`), with ``pending`` (the withheld cases' rows,
    :mod:`faers_anon.series.pending`) to its ``pending/``; ``ids``: caseid → pseudonym already known,
    ``cases``: the store's ``cases.parquet`` made already (:func:`faers_anon.series.store.write_store`);
    ``series``: the placement's counts (returning, published, republished, withheld, retried cases and
    reports), kept in the record; ``republish``: the release's setting (:func:`check_republish`).

    Raises:
        InputError: the ledger folder cannot be written.
    """
    index = len(ledger.meta["releases"]) + 1
    entries = ledger_entries(built, index)
    name, state_name = f"release-{index:04d}.parquet", f"state-{index:04d}.parquet"
    store = ledger.path / f"store-{index:04d}"
    try:
        ledger.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        file, state = ledger.path / name, ledger.path / state_name
        _write(entries, file)
        _write(advance(ledger.state, entries, index), state)
        record = {"index": index, "quarters": quarters, "release": str(Path(out).resolve()),
                  "manifest_sha256": sha256_file(built / MANIFEST_NAME), "file": name,
                  "sha256": sha256_file(file), "state": state_name, "state_sha256": sha256_file(state),
                  "cases": entries.height, "groups": entries.get_column("group").n_unique(),
                  "withheld": withheld, "republish": republish,
                  **({"series": dict(series)} if series else {})}  # fmt: skip
        if ingested is not None:
            shutil.rmtree(store, ignore_errors=True)  # a store left by an interrupted run
            files = write_store(ingested, store, knowledge=built / "knowledge.csv", key=key.pseudonym_key,
                                pending=pending, ids=ids, cases=cases)  # fmt: skip
            record["store"] = {"folder": store.name, "files": files}
        meta = {**ledger.meta, "releases": [*ledger.meta["releases"], record]}
        meta["mac"] = _mac(meta, key)
        temp = ledger.path / f".{LEDGER_NAME}.tmp-{os.getpid()}"
        temp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise _fail(ledger.path, f"cannot be written ({exc.strerror or exc})") from exc
    return Staged(ledger, meta, file, temp, store if ingested is not None else None, state)


#: Rows per chunk a ledger file is handed to the Parquet writer in (:func:`_write`).
_CHUNK = 65_536


def _write(frame: pl.DataFrame, path: Path) -> None:
    """``frame`` as zstd Parquet (level 1, no column statistics: the ledger's files are read whole, never
    filtered), handed to the writer in chunks of :data:`_CHUNK` rows. The writer encodes a list column's
    pages chunk by chunk, and the state in one chunk wrote larger pages at twice the cost: the 400k series'
    state after quarter 4 (1.36 M cases) 4.2–4.7 CPU-s and 74 MB in one chunk, 2.6 CPU-s and 66 MB in chunks
    of 65,536 rows; level 1 without statistics 2.3–2.5 -> 1.7–1.9 CPU-s and 69 MB, read back in the same
    0.9–1.4 CPU-s (three rounds, load 9–16)."""
    parts = [frame.slice(at, _CHUNK) for at in range(0, frame.height, _CHUNK)]
    chunked = pl.concat(parts, rechunk=False) if len(parts) > 1 else frame
    chunked.write_parquet(path, compression="zstd", compression_level=1, statistics=False)
