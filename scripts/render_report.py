"""Render a release's report.html as a reviewer sees it: headless Chromium at 1400 px wide.

Takes one screenshot of the first screen (1400 × 900) and, with ``--height``, one of the page down to
that many pixels. The page's tables have fixed widths and wrap, so a table too wide for the window
would show as cut-off columns: look at the screenshots.

Chromium is Debian's ``chromium`` package (``apt-get install -y chromium``). Each run uses a new,
temporary profile folder, no network services, no sandbox (containers run as root).

Example: ``python scripts/render_report.py demo-release/report.html -o docs/report-demo.png --height 4200``
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import click

_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--force-device-scale-factor=1",
)  # fmt: skip


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise click.ClickException("chromium not found (apt-get install -y chromium)")


def screenshot(page: Path, out: Path, *, width: int = 1400, height: int = 900) -> Path:
    """One PNG of ``page`` in a ``width`` × ``height`` window."""
    with tempfile.TemporaryDirectory(prefix="render-report-") as profile:
        command = [
            _chromium(), *_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
            f"--screenshot={out.absolute()}", page.absolute().as_uri(),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if not out.is_file():
        raise click.ClickException(f"chromium wrote no screenshot: {done.stderr.strip()[-500:]}")
    return out


@click.command()
@click.argument("page", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="PNG file.")
@click.option("--height", type=int, default=None, help="Also a tall screenshot (*-full.png).")
def main(page: Path, out: Path, height: int | None) -> None:
    """Screenshot PAGE (report.html) at 1400 px wide, as a reviewer's browser shows it."""
    click.echo(f"first screen: {screenshot(page, out)}")
    if height:
        full = out.with_name(f"{out.stem}-full{out.suffix}")
        click.echo(f"page: {screenshot(page, full, height=height)}")


if __name__ == "__main__":
    main()
