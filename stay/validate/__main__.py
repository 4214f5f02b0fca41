"""``python -m stay.validate``: see ``stay.validate._cli``."""

from __future__ import annotations

import sys

from stay.validate._cli import main

sys.exit(main())
