"""``python -m stay``: the ``stay`` program (``stay.cli.main``), exit codes and all."""

from __future__ import annotations

import sys

from stay.cli import main

sys.exit(main())
