"""The value lattice: what the semantic model knows about the value of an expression.

Every fact has an "unknown" element, and rules stay silent on unknowns. Two values are
joined (both arms of an if/else, every binding that reaches a use) field by field: a fact
survives a join only when both sides agree on it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, replace
from typing import Optional, Union


class Kind(enum.Enum):
    UNKNOWN = "unknown"
    TENSOR = "tensor"
    ARRAY = "array"              # a NumPy array
    NUMBER = "number"            # a Python int/float/complex
    BOOL = "bool"
    STRING = "string"
    NONE = "none"
    DEVICE = "device"
    DTYPE = "dtype"
    SIZE = "size"                # torch.Size / x.shape
    MODULE = "module"            # an nn.Module instance
    MODULE_CLASS = "module-class"
    LOADER = "loader"            # a DataLoader: iteration yields whole batches
    DATASET = "dataset"          # a map-style dataset: indexing/iteration yields samples
    OPTIMIZER = "optimizer"
    SCALER = "scaler"            # torch.amp GradScaler
    SCHEDULER = "scheduler"
    SEQUENCE = "sequence"        # list / tuple / generator of `element`
    MAPPING = "mapping"          # dict with values `element`
    CALLABLE = "callable"        # a function (the file's own, a lambda, a loss function)
    EVENT = "event"              # torch.cuda.Event
    TENSOR_TYPE = "tensor-type"  # a legacy tensor type (`torch.cuda.FloatTensor`): `place` is where `.type(T)` puts data


class Place(enum.Enum):
    UNKNOWN = "unknown"
    CPU = "cpu"
    DEVICE = "device"            # the accelerator the program targets (cuda, `device`, ...)


class Origin(enum.Enum):
    """Where an element came from, for values bound by a loop or an index."""

    NONE = "none"
    ROW = "row"                  # one row/sample of a host collection (tensor, array, list, dataset)
    BATCH = "batch"              # one element of a DataLoader: a whole batch
    CHUNK = "chunk"              # one piece of a split/chunk: several rows at once


LAYOUT_CONTIGUOUS = "contiguous"
LAYOUT_PERMUTED = "permuted"     # transpose / permute / .T / movedim
LAYOUT_EXPANDED = "expanded"     # expand / broadcast_to
LAYOUT_NARROWED = "narrowed"     # narrow / a step slice
LAYOUT_UNKNOWN = "unknown"

Size = Union[int, str, None]     # a literal size, a symbolic name, or unknown


@dataclass(frozen=True)
class Layout:
    """How a tensor's memory relates to its dimensions."""

    state: str = LAYOUT_UNKNOWN
    label: str = ""                      # the op that made it non-contiguous, for messages
    perm: Optional[tuple[int, ...]] = None  # output dim k reads input dim perm[k]
    strides: Optional[tuple[int, ...]] = None  # exact strides when every size is literal
    source: object = None                # the CST node that made it non-contiguous
    base: object = None                  # the value before that op (its shape), if known

    @property
    def contiguous(self) -> bool:
        return self.state == LAYOUT_CONTIGUOUS


CONTIGUOUS = Layout(LAYOUT_CONTIGUOUS)
UNKNOWN_LAYOUT = Layout()


@dataclass(frozen=True)
class Value:
    kind: Kind = Kind.UNKNOWN
    place: Place = Place.UNKNOWN
    pinned: Optional[bool] = None        # tensors: in pinned host memory; loaders: pin_memory
    shape: Optional[tuple[Size, ...]] = None  # rank = len(shape); None when the rank is unknown
    layout: Layout = UNKNOWN_LAYOUT
    origin: Origin = Origin.NONE
    element: Optional["Value"] = None    # containers, loaders, datasets, tensors' rows
    items: Optional[tuple["Value", ...]] = None  # fixed tuples: one value per position
    cls: Optional[str] = None            # a module's class (qualified or local name)
    node: object = field(default=None, compare=False)  # where it was made
    hint: bool = False                   # decided by an identifier's name only
    literal: object = None               # Python literal value (numbers, strings)
    # A field of a loader batch is taken for a tensor because default_collate makes one of
    # a tensor or number field; where the dataset's sample field is itself a list (two
    # crops of one image), the batch field is a list of tensors. True: the kind rests on
    # that default only (see SemanticModel.container).
    collated: bool = False

    @property
    def rank(self) -> Optional[int]:
        return len(self.shape) if self.shape is not None else None

    def is_(self, *kinds: Kind) -> bool:
        return self.kind in kinds

    @property
    def on_device(self) -> bool:
        return self.place is Place.DEVICE

    @property
    def on_cpu(self) -> bool:
        return self.place is Place.CPU

    def with_(self, **changes) -> "Value":
        """`dataclasses.replace(self, **changes)`, without its per-call walk of the fields
        and keyword call (the model makes one of these per value it refines)."""
        if not changes.keys() <= _VALUE_FIELDS:
            return replace(self, **changes)  # (raises as replace does)
        new = _new_object(self.__class__)
        for name in _VALUE_FIELD_ORDER:
            _set_field(new, name, changes[name] if name in changes else getattr(self, name))
        return new


_VALUE_FIELD_ORDER = tuple(f.name for f in fields(Value))  # every field is an init field
_VALUE_FIELDS = frozenset(_VALUE_FIELD_ORDER)
_new_object = object.__new__
_set_field = object.__setattr__  # as the frozen dataclass's own __init__ sets its fields

UNKNOWN = Value()
NUMBER = Value(Kind.NUMBER)
STRING = Value(Kind.STRING)
BOOL = Value(Kind.BOOL)
NONE = Value(Kind.NONE)


def tensor(place: Place = Place.UNKNOWN, shape=None, layout: Layout = UNKNOWN_LAYOUT, **kw) -> Value:
    return Value(Kind.TENSOR, place, shape=shape, layout=layout, **kw)


def _same(a, b):
    return a if a == b else None


def join(a: Value, b: Value) -> Value:
    """What is known of a value that is either `a` or `b`."""
    if a is b or a == b:
        return a
    if a.kind is Kind.NONE and b.kind is not Kind.UNKNOWN:
        return b  # `x = None` then `x = model(...)`: a None default says nothing on devices
    if b.kind is Kind.NONE and a.kind is not Kind.UNKNOWN:
        return a
    if a.kind is not b.kind:
        if {a.kind, b.kind} <= {Kind.NUMBER, Kind.BOOL}:
            return NUMBER
        # Field by field: where both sides agree on the place, the place survives.
        if a.place is b.place and a.place is not Place.UNKNOWN:
            return Value(place=a.place, hint=a.hint or b.hint)
        return UNKNOWN
    element = None
    if a.element is not None and b.element is not None:
        element = join(a.element, b.element)
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items))
    layout = a.layout if a.layout == b.layout else (
        CONTIGUOUS if a.layout.contiguous and b.layout.contiguous else UNKNOWN_LAYOUT)
    shape = None
    if a.shape is not None and b.shape is not None and len(a.shape) == len(b.shape):
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    return Value(
        kind=a.kind,
        place=a.place if a.place is b.place else Place.UNKNOWN,
        pinned=_same(a.pinned, b.pinned),
        shape=shape,
        layout=layout,
        origin=a.origin if a.origin is b.origin else Origin.NONE,
        element=element,
        items=items,
        cls=_same(a.cls, b.cls),
        node=a.node if a.node is b.node else None,
        hint=a.hint or b.hint,
        literal=_same(a.literal, b.literal),
        collated=a.collated or b.collated,
    )


def join_all(values) -> Value:
    result: Optional[Value] = None
    for value in values:
        result = value if result is None else join(result, value)
        if result is UNKNOWN:
            return UNKNOWN
    return result if result is not None else UNKNOWN
