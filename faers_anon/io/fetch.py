"""Download FDA FAERS quarterly ASCII zips (SPEC §1; the `fetch` command).

The FDA publishes one zip per quarter: ``faers_ascii_2024q1.zip`` (modern FAERS, 2012Q4 onward)
and ``aers_ascii_2004q1.zip`` (legacy AERS, 2004Q1–2012Q3), under
``https://fis.fda.gov/content/Exports/``. A download is:

* resumable: bytes go to ``<name>.part``; a rerun asks the server for the rest with an HTTP
  ``Range`` header and appends when the server answers 206 (a 200 answer restarts the file);
* checked: the byte count must equal the server's announced size, and the zip must open, pass
  its CRC check (``ZipFile.testzip``) and contain a DEMO table; only then is ``.part`` renamed to
  the final name, so a final name always means a complete, valid zip;
* idempotent: a valid final zip already in the folder is kept and not downloaded again.

Failures are one-line :class:`FaersAnonError` messages: offline or unreachable host, a quarter the
FDA has not published (HTTP 404), a corrupt download.
"""

from __future__ import annotations

import logging
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from faers_anon.errors import ConfigError, FaersAnonError

__all__ = [
    "FDA_BASE_URL",
    "FetchConfig",
    "FetchResult",
    "Quarter",
    "fetch_quarters",
    "parse_quarter",
    "zip_name",
]

log = logging.getLogger(__name__)

FDA_BASE_URL = "https://fis.fda.gov/content/Exports/"
_QUARTER = re.compile(r"^(?:(\d{4})|(\d{2}))\s*Q([1-4])$", re.IGNORECASE)
_CHUNK = 1 << 16  # bytes per write: a dropped connection loses at most this much
_FIRST_FAERS = (2012, 4)
_FIRST_AERS = (2004, 1)


@dataclass(frozen=True, slots=True, order=True)
class Quarter:
    """A FAERS quarter such as 2024Q1."""

    year: int
    q: int

    def __str__(self) -> str:
        return f"{self.year}Q{self.q}"


def parse_quarter(text: str) -> Quarter:
    """Parse ``2024Q1``, ``2024q1`` or ``24Q1`` (two-digit years are 20yy).

    Raises:
        ConfigError: the text is not a quarter, or lies before 2004Q1 (no ASCII extract exists).
    """
    match = _QUARTER.match(text.strip())
    if match is None:
        raise ConfigError(f"quarter: cannot read {text!r} (expected e.g. 2024Q1)")
    year = int(match.group(1)) if match.group(1) else 2000 + int(match.group(2))
    quarter = Quarter(year, int(match.group(3)))
    if (quarter.year, quarter.q) < _FIRST_AERS:
        raise ConfigError(f"quarter: {quarter} has no quarterly extract (the first is 2004Q1)")
    return quarter


def zip_name(quarter: Quarter) -> str:
    """The FDA's file name for a quarter: ``aers_ascii_yyyyqN.zip`` before 2012Q4, else ``faers_ascii_…``."""
    prefix = "faers" if (quarter.year, quarter.q) >= _FIRST_FAERS else "aers"
    return f"{prefix}_ascii_{quarter.year}q{quarter.q}.zip"


@dataclass(frozen=True, kw_only=True, slots=True)
class FetchConfig:
    """Options of ``faers-anon fetch``.

    Attributes:
        base_url: where the zips live (the FDA's export folder; tests point it at a local server).
        timeout: seconds to wait for the server before giving up on a request.
    """

    base_url: str = FDA_BASE_URL
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://; got {self.base_url!r}")
        if self.timeout <= 0:
            raise ConfigError(f"timeout must be > 0 seconds; got {self.timeout!r}")


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What ``fetch`` did for each quarter: the zip's path, its size and whether it was downloaded now."""

    files: tuple[Path, ...]
    sizes: tuple[int, ...]
    downloaded: tuple[bool, ...] = field(default_factory=tuple)

    def summary(self) -> str:
        """One line per quarter."""
        lines = []
        for path, size, new in zip(self.files, self.sizes, self.downloaded, strict=True):
            state = "downloaded" if new else "already present"
            lines.append(f"{path.name}: {size:,} bytes, {state}")
        return "\n".join(lines)


def _check_zip(path: Path, *, source: str) -> None:
    """Raise FaersAnonError unless ``path`` is a readable zip with a DEMO table."""
    try:
        with zipfile.ZipFile(path) as archive:
            broken = archive.testzip()
            names = [Path(n).name.upper() for n in archive.namelist()]
    except (zipfile.BadZipFile, OSError) as exc:
        raise FaersAnonError(f"{source}: downloaded file is not a valid zip ({exc})") from exc
    if broken is not None:
        raise FaersAnonError(f"{source}: zip member {broken!r} fails its CRC check")
    if not any(n.startswith("DEMO") for n in names):
        raise FaersAnonError(f"{source}: zip holds no DEMO table (is this a FAERS quarterly extract?)")


def _download(url: str, part: Path, *, timeout: float) -> None:
    """Fetch ``url`` into ``part``, resuming from its current size when the server allows it."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        response = requests.get(url, headers=headers, stream=True, timeout=timeout)
    except requests.RequestException as exc:
        raise FaersAnonError(f"{url}: cannot connect ({type(exc).__name__}); are we offline?") from exc
    with response:
        if response.status_code == 416 and have:  # nothing left to send: the part is complete
            return
        if response.status_code == 404:
            raise FaersAnonError(f"{url}: not found (HTTP 404); has the FDA published this quarter?")
        if response.status_code not in (200, 206):
            raise FaersAnonError(f"{url}: server answered HTTP {response.status_code}")
        resuming = response.status_code == 206
        expected = response.headers.get("Content-Length")
        total = (have if resuming else 0) + int(expected) if expected is not None else None
        mode = "ab" if resuming else "wb"
        try:
            with part.open(mode) as sink:
                for chunk in response.iter_content(_CHUNK):
                    sink.write(chunk)
        except requests.RequestException as exc:
            raise FaersAnonError(
                f"{url}: connection lost after {part.stat().st_size:,} bytes; run fetch again to resume"
            ) from exc
        except OSError as exc:
            raise FaersAnonError(f"{part}: cannot write ({exc.strerror})") from exc
    size = part.stat().st_size
    if total is not None and size != total:
        raise FaersAnonError(
            f"{url}: got {size:,} of {total:,} bytes; run fetch again to resume the download"
        )


def fetch_quarters(
    quarters: Sequence[str],
    out: Path,
    /,
    *,
    config: FetchConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> FetchResult:
    """Download each quarter's ASCII zip into ``out`` (created if needed).

    Args:
        quarters: quarter texts such as ``["2024Q1", "2024Q2"]``.
        out: destination folder.
        config: base URL and timeout.
        progress: called with one line per quarter as it finishes.

    Returns:
        The zips in the order asked, their sizes, and which were downloaded now.

    Raises:
        ConfigError: a quarter text cannot be read, or the list is empty.
        FaersAnonError: offline, a quarter not published, a download that is not a valid zip,
            or an output folder that cannot be written.
    """
    config = config or FetchConfig()
    if not quarters:
        raise ConfigError("fetch: name at least one quarter (e.g. 2024Q1)")
    parsed = [parse_quarter(q) for q in quarters]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FaersAnonError(f"{out}: cannot create the output folder ({exc.strerror})") from exc
    files: list[Path] = []
    sizes: list[int] = []
    downloaded: list[bool] = []
    for quarter in parsed:
        name = zip_name(quarter)
        final = out / name
        url = config.base_url.rstrip("/") + "/" + name
        new = False
        if final.exists():
            _check_zip(final, source=str(final))
        else:
            part = out / (name + ".part")
            _download(url, part, timeout=config.timeout)
            try:
                _check_zip(part, source=url)
            except FaersAnonError:
                part.unlink(missing_ok=True)  # a corrupt whole file cannot be resumed
                raise
            part.replace(final)
            new = True
            log.info("fetched %s (%d bytes)", name, final.stat().st_size)
        files.append(final)
        sizes.append(final.stat().st_size)
        downloaded.append(new)
        if progress is not None:
            progress(f"{quarter}: {name} {'downloaded' if new else 'already present'}")
    return FetchResult(tuple(files), tuple(sizes), tuple(downloaded))
