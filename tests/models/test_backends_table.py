"""docs/models.md sets the three backends side by side; its "supports" rows (caching,
batches, thinking, count tokens, screen) are held to each backend's declared ``features``
(``stay.models.FEATURES``): a cell says "no" or "n/a" exactly where the backend lacks the
feature, so the table cannot claim what the code does not declare, nor hide what it does."""

from __future__ import annotations

from stay.models import FEATURES, AnthropicBackend, OfflineBackend
from stay.models._openai import OpenAIBackend  # its module imports no SDK
from tests.conftest import ROOT

BACKENDS = {"offline": OfflineBackend.features, "anthropic": AnthropicBackend.features,
            "openai": OpenAIBackend.features}
"""Each column's backend, by the name its column is headed with, and what it declares."""
LACKS = ("no", "n/a")
"""How a cell says the backend lacks the feature."""


def side_by_side() -> dict[str, dict[str, str]]:
    """The table under "The three backends side by side": row -> column -> cell."""
    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    after = text.split("The three backends side by side:", 1)[1].strip().splitlines()
    lines = after[: next((i for i, line in enumerate(after) if not line.startswith("|")), len(after))]
    header, _rule, *body = ([cell.strip() for cell in line.strip("|").split("|")] for line in lines)
    return {row[0]: dict(zip(header[1:], row[1:], strict=True)) for row in body}


def test_the_side_by_side_table_says_what_each_backend_declares() -> None:
    table = side_by_side()
    assert set(next(iter(table.values()))) == set(BACKENDS)
    for feature in sorted(FEATURES):
        row = table[feature.replace("_", " ")]
        for backend, declared in BACKENDS.items():
            lacks = row[backend].split(" ", 1)[0].rstrip(",;(") in LACKS
            assert lacks == (feature not in declared), (
                f"docs/models.md says {backend} {'lacks' if lacks else 'has'} {feature}: {row[backend]!r}")
