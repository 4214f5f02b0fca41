"""Serving a rendered site on the loopback interface: only regular files inside it, never
through a symlink nor a listing. The ``Host`` header must name this server (DNS rebinding gets
421), and every log line is escaped, so a request cannot write terminal escape sequences."""

from __future__ import annotations

import errno
import mimetypes
import os
import shutil
import stat
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from stay._display import terminal_text
from stay.errors import UsageError

HOST = "127.0.0.1"
"""Loopback only: the site is never offered to the network."""
_NAMES = (HOST, "localhost")
"""The names a browser on this machine uses for the server."""


class SiteServer(ThreadingHTTPServer):
    """One site's server; daemon request threads, so a client that never finishes cannot hold Ctrl-C up."""

    def __init__(self, site: Path, port: int) -> None:
        self.site = site.resolve()
        super().__init__((HOST, port), SiteHandler)

    def hosts(self) -> frozenset[str]:
        port = self.server_address[1]
        bare = frozenset(_NAMES) if port == 80 else frozenset()
        return frozenset(f"{name}:{port}" for name in _NAMES) | bare

    def handle_error(self, request: Any, client_address: Any) -> None:
        # never a traceback on the person's terminal: one line, escaped
        kind = sys.exc_info()[0]
        _log(f"error answering a request: {kind.__name__ if kind else 'unknown'}")


class SiteHandler(BaseHTTPRequestHandler):
    server: SiteServer

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _answer(self, send_body: bool) -> None:
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1:
            self.send_error(HTTPStatus.BAD_REQUEST, "a request names one Host")
            return
        if hosts[0].strip().lower() not in self.server.hosts():
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "this server answers only to its loopback address")
            return
        status, path = self._file()
        if path is None:
            self.send_error(status)
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", _content_type(path.name))
            self.send_header("Content-Length", str(info.st_size))
            self.end_headers()
            if send_body:
                shutil.copyfileobj(handle, self.wfile)

    def _file(self) -> tuple[HTTPStatus, Path | None]:
        """The regular file inside the site that the request's path names, or why there is none."""
        if not self.path.startswith("/"):
            return HTTPStatus.BAD_REQUEST, None
        try:
            name = unquote(urlsplit(self.path).path, errors="strict")
        except (UnicodeDecodeError, ValueError):
            return HTTPStatus.BAD_REQUEST, None
        if not all(c.isprintable() for c in name) or "\\" in name:
            return HTTPStatus.BAD_REQUEST, None
        parts = name[1:].split("/") if name != "/" else ["index.html"]
        if any(part in ("", ".", "..") for part in parts):
            return HTTPStatus.NOT_FOUND, None
        path = self.server.site.joinpath(*parts)
        try:
            mode = path.lstat().st_mode
            inside = path.resolve(strict=True).is_relative_to(self.server.site)
        except (OSError, RuntimeError):  # missing, or a loop of links
            return HTTPStatus.NOT_FOUND, None
        if not stat.S_ISREG(mode) or not inside:
            return HTTPStatus.NOT_FOUND, None
        return HTTPStatus.OK, path

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # one short line per request, to stderr; the path is the client's text, so escaped
        shown = int(code) if isinstance(code, int) else code
        _log(f"{getattr(self, 'command', None) or '-'} {getattr(self, 'path', None) or '-'} {shown}")

    def log_error(self, format: str, *args: Any) -> None:
        pass  # the request's own line says the code; the client's text is never echoed raw


def _content_type(name: str) -> str:
    guessed = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return f"{guessed}; charset=utf-8" if guessed.startswith("text/") or guessed.endswith("javascript") else guessed


def _log(line: str) -> None:
    sys.stderr.write(terminal_text(line) + "\n")  # a request line holds no newline nor tab


def make_server(site: Path, port: int) -> SiteServer:
    """A server for ``site`` on 127.0.0.1:``port`` (0 picks a free port)."""
    try:
        return SiteServer(site, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {HOST} is in use; pass another with --port (0 picks a free one)"
                             ) from None
        if exc.errno == errno.EACCES:
            raise UsageError(f"port {port} needs privileges; pass a port above 1023 with --port") from None
        raise


def serve(site: Path, port: int) -> None:
    server = make_server(site, port)
    host, bound = server.server_address[:2]
    print(f"serving {site} at http://{host!s}:{bound}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
