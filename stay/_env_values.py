"""Reading one environment variable's value: a whole number, seconds, dollars, a
path, a switch, a time, a backend's name or an API key, each refused in one line
naming the variable when it cannot be used.

Split from ``stay.settings``, which reads the environment (the only module that does)
and hands each variable's text to these.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from stay import _secrets
from stay._backend_names import checked_backend
from stay.errors import UsageError


class _Reader:
    """Reads one variable at a time, refusing a value that cannot be used in one line."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    def _raw(self, name: str) -> str | None:
        value = self.env.get(name, "").strip()
        return value or None

    def backend(self, name: str) -> str | None:
        raw = self._raw(name)
        return None if raw is None else checked_backend(raw, name)

    def integer(self, name: str, default: int, *, least: int) -> int:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise UsageError(f"{name}={raw[:40]!r} is not a whole number") from None
        if value < least:
            raise UsageError(f"{name} must be at least {least}, not {value}")
        return value

    def seconds(self, name: str, default: float, *, zero: bool = False) -> float:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise UsageError(f"{name}={raw[:40]!r} is not a number of seconds") from None
        if not (value >= 0 if zero else value > 0) or value == float("inf"):
            raise UsageError(f"{name} must be a number of seconds{' of at least 0' if zero else ' above 0'}, "
                             f"not {raw[:40]}")
        return value

    def dollars(self, name: str) -> float | None:
        raw = self._raw(name)
        if raw is None:
            return None
        try:
            value = float(raw.removeprefix("$"))
        except ValueError:
            raise UsageError(f"{name}={raw[:40]!r} is not an amount of US dollars (e.g. {name}=2.50)") from None
        if not 0 < value < float("inf"):
            raise UsageError(f"{name} must be an amount of US dollars above 0, not {raw[:40]}")
        return value

    def path(self, name: str) -> Path | None:
        raw = self._raw(name)
        return Path(raw) if raw is not None else None

    def switch(self, name: str) -> bool | None:
        raw = self._raw(name)
        if raw is None or raw.lower() == "auto":
            return None
        if raw.lower() in ("on", "1", "true", "yes"):
            return True
        if raw.lower() in ("off", "0", "false", "no"):
            return False
        raise UsageError(f"{name}={raw[:40]!r} is not on, off or auto")

    def epoch(self, name: str) -> int | None:
        raw = self._raw(name)
        if raw is None:
            return None
        from datetime import UTC, datetime

        try:
            value = int(raw)
            datetime.fromtimestamp(value, UTC)
        except (ValueError, OverflowError, OSError):
            raise UsageError(f"{name}={raw[:40]!r} is not a usable time: give whole seconds since 1970 "
                             "(e.g. 1780000000), or unset it") from None
        return value


def checked_key(raw: str, name: str = "ANTHROPIC_API_KEY") -> str:
    """An API key as read: surrounding whitespace stripped (a key pasted with its newline),
    and refused, without being shown, when what is left holds a character no HTTP header
    can carry (it would reach the terminal in the HTTP library's error)."""
    key = raw.strip()
    if any(not 33 <= ord(char) <= 126 for char in key):
        _secrets.keep([key, raw])
        raise UsageError(f"{name} holds a space, a control character or a non-ASCII character inside "
                         "it; set it to the key alone (the value is not shown)")
    return key
