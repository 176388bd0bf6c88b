"""`faers-anon fetch` against a FAERS-like file server on the loopback address."""

from __future__ import annotations

import io
import random
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.errors import ConfigError, FaersAnonError
from faers_anon.io.fetch import FetchConfig, Quarter, fetch_quarters, parse_quarter, zip_name


def _quarter_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ASCII/DEMO24Q1.txt", "primaryid$caseid$caseversion\n1001$100$1\n" * 200)
        archive.writestr("ASCII/DRUG24Q1.txt", "primaryid$caseid$drug_seq\n1001$100$1\n")
        # incompressible filler so the zip spans several download chunks
        archive.writestr("ASCII/STAT24Q1.bin", random.Random(0).randbytes(400_000), zipfile.ZIP_STORED)
    return buffer.getvalue()


class _Server:
    """Serves ``files`` with HTTP Range support; can cut a response short once (``cut_after``)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.cut_after: int | None = None
        self.requests: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

            def do_GET(self) -> None:  # noqa: N802
                name = self.path.rsplit("/", 1)[-1]
                server.requests.append(self.headers.get("Range"))
                body = server.files.get(name)
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.end_headers()
                        return
                    self.send_response(206)
                else:
                    self.send_response(200)
                payload = body[start:]
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if server.cut_after is not None:
                    self.wfile.write(payload[: server.cut_after])
                    server.cut_after = None
                    self.wfile.flush()
                    self.connection.close()
                    return
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/content/Exports/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server() -> Iterator[_Server]:
    with _Server({"faers_ascii_2024q1.zip": _quarter_zip(), "broken_ascii_2024q2.zip": b"x"}) as srv:
        yield srv


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2024Q1", Quarter(2024, 1)), ("24q3", Quarter(2024, 3)), (" 2012Q4 ", Quarter(2012, 4))],
)
def test_parse_quarter(text: str, expected: Quarter) -> None:
    assert parse_quarter(text) == expected


@pytest.mark.parametrize("text", ["2024Q5", "2024", "Q1", "2003Q4"])
def test_parse_quarter_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="quarter"):
        parse_quarter(text)


def test_zip_names_follow_the_fda_eras() -> None:
    assert zip_name(Quarter(2012, 3)) == "aers_ascii_2012q3.zip"
    assert zip_name(Quarter(2012, 4)) == "faers_ascii_2012q4.zip"


def test_fetch_downloads_checks_and_keeps(server: _Server, tmp_path: Path) -> None:
    config = FetchConfig(base_url=server.url)
    first = fetch_quarters(["2024Q1"], tmp_path, config=config)
    assert first.downloaded == (True,)
    assert first.files[0].read_bytes() == server.files["faers_ascii_2024q1.zip"]
    again = fetch_quarters(["2024q1"], tmp_path, config=config)
    assert again.downloaded == (False,)
    assert len(server.requests) == 1


def test_fetch_resumes_an_interrupted_download(server: _Server, tmp_path: Path) -> None:
    body = server.files["faers_ascii_2024q1.zip"]
    server.cut_after = len(body) // 2
    config = FetchConfig(base_url=server.url)
    with pytest.raises(FaersAnonError, match="run fetch again"):
        fetch_quarters(["2024Q1"], tmp_path, config=config)
    part = tmp_path / "faers_ascii_2024q1.zip.part"
    kept = part.stat().st_size
    assert 0 < kept <= len(body) // 2
    assert not (tmp_path / "faers_ascii_2024q1.zip").exists()
    result = fetch_quarters(["2024Q1"], tmp_path, config=config)
    assert server.requests[-1] == f"bytes={kept}-"
    assert result.files[0].read_bytes() == body
    assert not part.exists()


def test_fetch_unpublished_quarter_is_one_line(server: _Server, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["fetch", "2031Q1", "-o", str(tmp_path), "--base-url", server.url])
    assert result.exit_code == 1
    assert result.output.count("Error:") == 1
    assert "HTTP 404" in result.output
    assert "Traceback" not in result.output


def test_fetch_corrupt_zip_is_rejected(tmp_path: Path) -> None:
    with _Server({"faers_ascii_2024q2.zip": b"PK\x03\x04 not really a zip"}) as srv:
        with pytest.raises(FaersAnonError, match="not a valid zip"):
            fetch_quarters(["2024Q2"], tmp_path, config=FetchConfig(base_url=srv.url))
    assert list(tmp_path.iterdir()) == []


def test_fetch_offline_is_one_line(tmp_path: Path) -> None:
    # Port 9 on loopback (discard) has no listener here: the connection is refused at once.
    result = CliRunner().invoke(
        cli, ["fetch", "2024Q1", "-o", str(tmp_path), "--base-url", "http://127.0.0.1:9/x/"]
    )
    assert result.exit_code == 1
    assert "cannot connect" in result.output
    assert "Traceback" not in result.output


def test_fetch_cli_happy_path(server: _Server, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["fetch", "2024Q1", "-o", str(tmp_path), "--base-url", server.url])
    assert result.exit_code == 0, result.output
    assert "faers_ascii_2024q1.zip" in result.output
    assert (tmp_path / "faers_ascii_2024q1.zip").is_file()
