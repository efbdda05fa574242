"""devicelint: a static linter for PyTorch device bugs."""

__version__ = "0.1.0"
