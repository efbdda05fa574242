"""devicelint's built-in rules, one module per rule.

This folder is installed as the package `devicelint.rules` (see pyproject.toml): rule code
lives at the top of the repository but ships under devicelint's own namespace.
"""
