"""The rule families, one module each, named by the prefix of its codes (``les.py`` holds
les001..les011); ``stay.validate._check`` is their registry."""
