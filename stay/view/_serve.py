"""Serving a rendered site on the loopback interface, for a quick look in a browser."""

from __future__ import annotations

import errno
import sys
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from stay.errors import UsageError

HOST = "127.0.0.1"
"""Loopback only: the site is never offered to the network."""


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # one short line per request, to stderr
        sys.stderr.write(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}\n")

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


def make_server(site: Path, port: int) -> ThreadingHTTPServer:
    """A server for ``site`` on 127.0.0.1:``port`` (0 picks a free port)."""
    handler = partial(_QuietHandler, directory=str(site))
    try:
        return ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {HOST} is in use; pass another with --port (0 picks a free one)"
                             ) from None
        if exc.errno == errno.EACCES:
            raise UsageError(f"port {port} needs privileges; pass a port above 1023 with --port") from None
        raise


def serve(site: Path, port: int, announce: Any = print) -> None:
    """Serve until interrupted (Ctrl-C)."""
    server = make_server(site, port)
    host, bound = server.server_address[:2]
    announce(f"serving {site} at http://{host!s}:{bound}/ (Ctrl-C to stop)")
    try:
        server.serve_forever()
    finally:
        server.server_close()
