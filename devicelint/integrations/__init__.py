"""Integrations that sit on top of the linter: the language server (`devicelint server`)."""
