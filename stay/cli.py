"""The ``stay`` command. Subcommands hand their arguments to the module that owns them."""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = """usage: stay COMMAND [ARGS]

commands:
  validate [--strict] [--format text|json] [--data-dir DIR] [PATH ...]
           check courses against the course format (exit 0 ok, 1 FAIL, 2 usage, 3 bug)
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "validate":
        from stay.validate._cli import main as validate_main

        return validate_main(rest)
    sys.stderr.write(f"usage error: unknown command '{command}' (run 'stay --help')\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
