"""``python -m stay.validate`` and ``stay validate``: the contract's command line, plus ``--jobs N`` (output
byte-identical whatever N), ``--select``/``--ignore`` and ``-h``/``--help`` (issue 9; the frozen reference
refuses it). Exit codes: 0 no FAIL, 1 a FAIL, 2 usage, 3 internal; an error is one line, never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from stay._display import terminal_text
from stay.errors import UsageError

USAGE = ("python -m stay.validate [--strict] [--format text|json] [--data-dir DIR] [--jobs N] "
         "[--select RULES] [--ignore RULES] [--courses-of] [PATH ...]")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _jobs(value: str) -> int:
    try:
        jobs = int(value, 10)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of processes, at least 1; got '{value}'")
    return jobs


HELP = f"""usage: {USAGE}

Check courses against the course format and print every defect.

positional arguments:
  PATH               a course (a directory holding course.yaml) or a directory of
                     courses; default: courses

options:
  -h, --help         show this help and exit
  --strict           treat WARN defects as failures
  --format text|json text (default) or the JSON document of validator-rules.md
  --data-dir DIR     where bloom-verbs.yaml and house-style.yaml live
                     (default: $STAY_DATA_DIR, then ./data, then the data
                     shipped with stay)
  --jobs N           check N courses at a time, one process each (default: one per
                     core); the output is the same whatever N is
  --select RULES     run only these rules: codes (aud001), family prefixes (aud)
                     or groups (contract, stay), comma-separated or repeated;
                     default: every rule (contract, stay), what a build checks
  --ignore RULES     do not run these rules (the same forms)
  --courses-of       each PATH is a file: check the courses holding them (the
                     nearest directory above each with a course.yaml), as a
                     pre-commit hook is given a commit's files; a file in no
                     course is skipped

exit codes: 0 no FAIL, 1 at least one FAIL, 2 usage error, 3 internal error
"""


def _wants_help(argv: Sequence[str]) -> bool:
    """``-h``/``--help`` given as an option (not as the value of --format/--data-dir/--jobs)."""
    takes_value = {"--format", "--data-dir", "--jobs", "--select", "--ignore"}
    for previous, arg in zip(["", *argv], argv, strict=False):
        if arg == "--":
            return False
        if arg in ("-h", "--help") and previous not in takes_value:
            return True
    return False


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = _Parser(prog="stay validate", usage=USAGE, add_help=False, allow_abbrev=False)
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--data-dir", dest="data_dir", default=None)
    parser.add_argument("--jobs", type=_jobs, default=None)
    parser.add_argument("--select", action="append", default=None)
    parser.add_argument("--ignore", action="append", default=None)
    parser.add_argument("--courses-of", dest="courses_of", action="store_true")
    parser.add_argument("paths", nargs="*", metavar="PATH")
    try:
        return parser.parse_intermixed_args(list(argv))
    except SystemExit:  # argparse exits on some errors without calling error()
        raise UsageError("invalid arguments") from None


def _write(stream: TextIO, text: str) -> None:
    """Write UTF-8 whatever the locale. On a terminal, control characters are written out as escapes, so
    none can drive it; into a pipe or a file the text is the contract's, as written (R6, R7)."""
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        text = terminal_text(text)
    data = text.encode("utf-8", "backslashreplace")
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8"))
        stream.flush()


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def run(argv: Sequence[str]) -> int:
    """Validate and print; returns the exit code. UsageError propagates."""
    if _wants_help(argv):
        _write(sys.stdout, HELP)
        return 0
    from stay.validate._check import validate_courses  # imported here so --help stays cheap

    args = _parse(argv)
    paths = courses_of(args.paths) if args.courses_of else args.paths or ["courses"]
    report = validate_courses(paths, strict=args.strict, data_dir=args.data_dir, jobs=args.jobs,
                              select=args.select, ignore=args.ignore)
    _write(sys.stdout, report.to_json() if args.format == "json" else report.to_text())
    return report.exit_code


def courses_of(files: Sequence[str]) -> list[str]:
    """The courses holding ``files``, once each, in order: for each file the nearest directory at or above
    it holding course.yaml. A file in no course (a README) is in none; it need not exist (a deletion)."""
    found: dict[str, None] = {}
    for file in files:
        path = Path(file)
        for directory in (path, *path.parents) if path.is_dir() else path.parents:
            if (directory / "course.yaml").is_file():
                found[os.fspath(directory)] = None
                break
    return list(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: never raises, never prints a traceback; returns the exit code."""
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        line = f"usage error: {_one_line(exc)} (usage: {USAGE})\n"
        code = 2
    except BaseException as exc:
        line = (f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                f"(a bug in the validator, not a defect in the course)\n")
        code = 3
    with contextlib.suppress(BaseException):  # nothing more can be reported
        _write(sys.stderr, line)
    return code
