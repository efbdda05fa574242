"""The semantic model: what values are, computed lazily per file and shared by every rule.

See `devicelint.semantic.model.SemanticModel` for what a rule may ask.
"""

from devicelint.semantic.model import SemanticModel
from devicelint.semantic.values import Kind, Origin, Place, Value

__all__ = ["SemanticModel", "Kind", "Origin", "Place", "Value"]
