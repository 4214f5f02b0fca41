"""``stay view --serve`` over real HTTP on 127.0.0.1: only the site's own regular files,
only to a request that names this server, a plain 400 or 404 for any other URL, and a
log line that a request cannot turn into terminal escape sequences."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stay.view._serve import make_server

SITE = {"index.html": b"<p>home</p>", "m01-l01.html": b"<p>lesson</p>", "style.css": b"p{}"}
SECRET = b"the person's private key"


@dataclass(frozen=True)
class Served:
    port: int
    site: Path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    site = tmp_path / "site"
    site.mkdir()
    for name, data in SITE.items():
        (site / name).write_bytes(data)
    (site / "sub").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (site / "leak.html").symlink_to(outside / "secret.txt")  # a link to a file outside the site
    (site / "linked").symlink_to(outside)  # and to a directory outside it
    (site / "alias.html").symlink_to(site / "index.html")  # a link, even to a page of the site
    server = make_server(site, 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Served(server.server_address[1], site)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def ask(port: int, target: bytes, host: bytes | None = b"", extra: bytes = b"") -> tuple[int, bytes]:
    """Send one raw request (``host`` b"": this server's own address; None: no Host header);
    the status code and body. Raw, so any byte can be put in the request line."""
    lines = [b"GET " + target + b" HTTP/1.1"]
    if host is not None:
        lines.append(b"Host: " + (host or f"127.0.0.1:{port}".encode()))
    lines.append(b"Connection: close")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(b"\r\n".join(lines) + b"\r\n" + extra + b"\r\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def test_the_sites_files_are_served(served: Served) -> None:
    for name, data in SITE.items():
        assert ask(served.port, b"/" + name.encode()) == (200, data)
    assert ask(served.port, b"/") == (200, SITE["index.html"])
    assert ask(served.port, b"/index.html?x=1#y") == (200, SITE["index.html"])


@pytest.mark.parametrize("target", [b"/leak.html", b"/linked/secret.txt", b"/alias.html", b"/sub/", b"/sub",
                                    b"/linked/", b"/../outside/secret.txt"])
def test_a_symlink_or_a_directory_is_never_served(served: Served, target: bytes) -> None:
    status, body = ask(served.port, target)
    assert status == 404 and SECRET not in body and SITE["index.html"] not in body


@pytest.mark.parametrize("host", [b"evil.example", b"evil.example:{port}", b"127.0.0.1:1", b"127.0.0.2:{port}",
                                  b"localhost.evil.example:{port}", b"127.0.0.1:{port}.evil.example", None])
def test_a_request_that_does_not_name_this_server_is_refused(served: Served, host: bytes | None) -> None:
    given = host.replace(b"{port}", str(served.port).encode()) if host is not None else None
    status, body = ask(served.port, b"/index.html", host=given)
    assert status in (400, 421) and SITE["index.html"] not in body


@pytest.mark.parametrize("host", [b"127.0.0.1:{port}", b"localhost:{port}", b"LocalHost:{port}"])
def test_the_loopback_names_of_this_server_are_served(served: Served, host: bytes) -> None:
    assert ask(served.port, b"/index.html", host=host.replace(b"{port}", str(served.port).encode()))[0] == 200


def test_two_host_headers_are_refused(served: Served) -> None:
    status, _ = ask(served.port, b"/index.html", extra=b"Host: evil.example\r\n")
    assert status == 400


@pytest.mark.parametrize("target", [b"/%00", b"/index.html%00.css", b"/%ff", b"/%c0%ae%c0%ae/", b"/..%2fsecret",
                                    b"/%2e%2e/outside/secret.txt", b"//etc/passwd", b"/a\\..\\b", b"/%0a",
                                    b"http://evil.example/index.html", b"*", b"/" + b"a" * 4000])
def test_a_bad_url_gets_a_plain_4xx_and_never_a_traceback(served: Served, target: bytes,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    status, body = ask(served.port, target)
    assert status in (400, 404, 414) and SECRET not in body
    assert ask(served.port, b"/")[0] == 200  # and the server still answers
    assert "Traceback" not in capsys.readouterr().err


def test_the_log_escapes_what_a_request_could_send_a_terminal(served: Served,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    ask(served.port, b"/\x1b]0;owned\x07\x1b[2J\x9b31m.html")
    ask(served.port, b"/\x1b[31m", host=b"evil.example\x1b[2J")
    err = capsys.readouterr().err
    assert err.count("\n") == 2, err  # one line a request
    assert not any(c in err for c in "\x1b\x07\x9b"), repr(err)
    assert "\\x1b" in err
