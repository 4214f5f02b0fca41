"""The rule families, one module each; ``stay.validate._rules`` is their registry."""
