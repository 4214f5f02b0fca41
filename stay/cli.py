"""The ``stay`` command: the same pipeline as ``stay.build_course``, from a shell.

Progress goes to stderr, results to stdout, and every refusal is one line naming
what went wrong and the command that fixes it. Exit codes are in the README.
"""

from __future__ import annotations

import signal
import sys


def _interrupted_at_start(_signal: int = 0, _frame: object = None) -> None:
    """The SIGINT handler while stay is starting or exiting: one line, exit 130."""
    import os

    try:
        sys.stdout.flush()  # what a finished command printed still reaches its reader
        sys.stderr.write("interrupted\n")
    except Exception:
        pass
    os._exit(130)


if __name__ == "__main__" or (sys.argv and sys.argv[0].endswith("stay")):
    # Ctrl-C during start-up (the imports below, a slow disk) ends quietly with 130,
    # not a traceback; main() installs the normal handling once it is running.
    signal.signal(signal.SIGINT, _interrupted_at_start)


import contextlib  # noqa: E402
import os  # noqa: E402
from collections.abc import Sequence  # noqa: E402

# the handlers and the parser live beside this module; the names stay.cli always had are its own still
from stay._cli_commands import _dispatch  # noqa: E402
from stay._cli_commands import render_graph as render_graph  # noqa: E402
from stay._cli_parser import _parser as _parser  # noqa: E402
from stay._display import terminal_stream  # noqa: E402  (re and html only)
from stay.errors import (  # noqa: E402  (errors imports nothing: --help stays cheap)
    EXIT_BUG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    EnvironmentProblem,
    StayError,
    exit_code,
)


def main(argv: Sequence[str] | None = None) -> int:
    process = argv is None  # the process's own command line: Ctrl-C is ours to handle
    args = list(sys.argv[1:] if argv is None else argv)
    streams = sys.stdout, sys.stderr
    # Everything the command prints, whoever prints it, reaches the terminal escaped and
    # encodable: a file name, a heading or a report field cannot drive the terminal, and an
    # ASCII locale cannot turn a Unicode path into a crash.
    sys.stdout, sys.stderr = terminal_stream(sys.stdout), terminal_stream(sys.stderr)
    try:
        try:
            if process:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            return _command(args)
        finally:
            if process:  # leaving: a Ctrl-C from here to the exit ends quietly, as at start-up
                signal.signal(signal.SIGINT, _interrupted_at_start)
            sys.stdout, sys.stderr = streams
    except KeyboardInterrupt:
        # Outside _command, so a Ctrl-C that lands while the handler is being swapped (signal.signal
        # is Python code) or while _command turns another exception into a code lands here too.
        _interrupted(process)
        return EXIT_INTERRUPTED


def _command(args: list[str]) -> int:
    """The command, every exception but Ctrl-C turned into its exit code and one line."""
    try:
        if args and args[0] == "validate":
            from stay.validate import main as validate_main

            return validate_main(args[1:])
        from stay._words import speaking  # stdlib only: --help stays cheap

        with speaking("shell"):  # every hint a command prints is a command to paste, not a Python call
            return _dispatch(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # every error ends in one line; none as a traceback
        return _report(exc)


def _interrupted(process: bool) -> None:
    """Ctrl-C: one line, then out at once. Worker threads may be blocked on a call that
    hangs; the interpreter would wait for them at exit, so a process leaves through
    os._exit (every file written so far is whole: writes are atomic)."""
    message = "interrupted; every file written so far is whole, run the command again to continue\n"
    try:
        sys.stderr.write(message)
        sys.stderr.flush()
        sys.stdout.flush()
    except Exception:
        pass
    if process:
        os._exit(EXIT_INTERRUPTED)


def _quiet_stdout() -> None:
    """The reader of stdout went away (``stay status X | head -1``): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _report(exc: BaseException) -> int:
    if isinstance(exc, OSError) and not isinstance(exc, StayError):  # BriefNotFound says its own fix
        exc = EnvironmentProblem.from_os_error(exc)
    code = exit_code(exc) if isinstance(exc, StayError) else EXIT_BUG
    if code == EXIT_BUG:
        line = f"internal error: {type(exc).__name__}: {_one_line(exc)} (a bug in stay; files written so far are whole)"
    elif code == EXIT_UNAVAILABLE:
        line = f"unavailable: {_one_line(exc)}"
    elif code == EXIT_USAGE:
        line = f"error: {_one_line(exc)}"
    else:
        line = f"refused: {_one_line(exc)}"
    with contextlib.suppress(Exception):
        sys.stderr.write(line + "\n")
    return code


def _one_line(text: object) -> str:
    """One line, and never a secret: every configured one is cut out by value, before the
    line is flattened and after (a secret may hold a space)."""
    from stay._secrets import redact
    from stay.settings import secrets_from

    secrets = secrets_from()
    return redact(" ".join(redact(str(text), secrets).split()), secrets)


if __name__ == "__main__":
    sys.exit(main())
