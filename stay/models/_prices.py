"""One price table: US dollars per million tokens, and what a call costs.

Prices are Anthropic's list prices for the Claude API as published in late 2026.
A 5-minute cache write costs 1.25x the input price and a cache read 0.1x. A model
missing from the table is reported as unpriced (cost None), never as free.
"""

from __future__ import annotations

from collections.abc import Mapping

from stay.models._request import Usage

# model id -> (input, output) in USD per million tokens
PRICES: Mapping[str, tuple[float, float]] = {
    "claude-opus-5-5": (4.0, 20.0),
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-opus-5": (5.0, 25.0),
    "claude-sonnet-5": (2.0, 10.0),
    "claude-opus-4-8": (5.0, 25.0),
    "claude-opus-4-7": (5.0, 25.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "offline": (0.0, 0.0),
}
CACHE_WRITE = 1.25
CACHE_READ = 0.1


def cost(model: str, usage: Usage) -> float | None:
    """US dollars for one call's usage, or None for a model with no price on file."""
    price = PRICES.get(model)
    if price is None:
        return None
    per_input, per_output = price
    return (usage.input_tokens * per_input
            + usage.cache_creation_input_tokens * per_input * CACHE_WRITE
            + usage.cache_read_input_tokens * per_input * CACHE_READ
            + usage.output_tokens * per_output) / 1_000_000
