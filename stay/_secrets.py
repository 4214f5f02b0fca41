"""The secrets this process was configured with, cut out by value (a proxy's key or an OTLP header has no
shape) from what stay prints and writes: whoever is given one ``keep``s it, every sink calls ``redact``.
Process-wide: the text to clean often comes from code that never saw the settings (the SDK's exceptions)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

REDACTED = "[redacted]"
SHORTEST = 8
"""Values shorter than this are not cut out: a short header value or key (``test``)
would take words out of every message; an API key or a token is far longer."""

_known: set[str] = set()
_lock = threading.Lock()


def keep(values: Iterable[str | None]) -> None:
    """Remember ``values`` as secrets (empty and too-short ones are ignored)."""
    found = {value for value in values if value and len(value) >= SHORTEST}
    if found:
        with _lock:
            _known.update(found)


def known() -> tuple[str, ...]:
    with _lock:
        return tuple(_known)


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret (and ``extra``) replaced, longest first: one holding another is cut whole."""
    secrets = {value for value in (*known(), *extra) if value and len(value) >= SHORTEST}
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_bytes(data: bytes) -> bytes:
    """``redact`` for the writers of bytes, which may hold text that is not UTF-8 around a secret."""
    for secret in sorted(known(), key=len, reverse=True):
        try:
            raw = secret.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 text can hold it
            continue
        if raw in data:
            data = data.replace(raw, REDACTED.encode())
    return data


def redact_data(value: Any, extra: Iterable[str | None] = ()) -> Any:
    """``redact`` on every string of a JSON-like ``value``, keys included."""
    secrets = tuple(extra)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact_data(k, secrets): redact_data(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_data(item, secrets) for item in value]
    return value


def url_secrets(url: str | None) -> list[str]:
    """The credentials in a URL's userinfo, as written and percent-decoded, whole and each part."""
    if not url or "@" not in url:
        return []
    try:
        netloc = urlsplit(url.strip()).netloc
    except ValueError:
        netloc = url.strip().split("/", 3)[2] if url.count("/") >= 2 else url
    userinfo = netloc.rpartition("@")[0] if "@" in netloc else ""
    if not userinfo:
        return []
    user, _sep, password = userinfo.partition(":")
    parts = [userinfo, user, password]
    return [text for part in parts for text in {part, unquote(part)} if text]


def shown_url(url: str) -> str:
    """``url`` as it may be shown: its userinfo, whatever its length, replaced by ``[redacted]``."""
    scheme, sep, rest = url.partition("://")
    end = min([at for at in map(rest.find, "/?#") if at >= 0], default=len(rest))
    if not sep or "@" not in rest[:end]:
        return url
    return f"{scheme}://{REDACTED}@{rest[:end].rpartition('@')[2]}{rest[end:]}"


def header_secrets(raw: str | None) -> list[str]:
    """Every value of an OTLP headers variable, as written and percent-decoded, each word of it (``Bearer
    <token>``), and every malformed pair whole: it is still somebody's token."""
    found: list[str] = []
    for pair in (raw or "").split(","):
        _name, sep, value = pair.partition("=")
        if not sep:
            found.append(pair.strip())
            continue
        decoded = unquote(value.strip())
        found += [value.strip(), decoded, *decoded.split()]
    return [text for text in found if text]
