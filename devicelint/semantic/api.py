"""PyTorch's API behaviour, read once from `torch_api.toml`."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional



@dataclass(frozen=True)
class OpSpec:
    name: str
    result: str = "tensor"
    place: str = "input"
    rank: str = "none"
    layout: str = "unknown"
    syncs: bool = False
    launches: bool = False


class ApiTable:
    def __init__(self, data: dict) -> None:
        self.methods: dict[str, OpSpec] = {}
        self.functions: dict[str, OpSpec] = {}
        for group in data.get("group", []):
            fields = {k: group[k] for k in ("result", "place", "rank", "layout", "syncs", "launches") if k in group}
            for name in group.get("methods", []):
                if name in self.methods:
                    raise ValueError(f"torch_api.toml: method {name!r} is listed twice")
                self.methods[name] = OpSpec(name, **fields)
            for name in group.get("functions", []):
                if name in self.functions:
                    raise ValueError(f"torch_api.toml: function {name!r} is listed twice")
                self.functions[name] = OpSpec(name, **fields)
        classes = data.get("classes", {})
        self.loaders = frozenset(classes.get("loaders", ()))
        self.dataset_prefixes = tuple(classes.get("datasets_prefixes", ()))
        self.optimizer_prefixes = tuple(classes.get("optimizer_prefixes", ()))
        self.scheduler_prefixes = tuple(classes.get("scheduler_prefixes", ()))
        self.scalers = frozenset(classes.get("scalers", ()))
        self.events = frozenset(classes.get("events", ()))
        self.attribute_mappings = frozenset(classes.get("attribute_mappings", ()))
        self.module_factory_prefixes = tuple(classes.get("module_factory_prefixes", ()))
        self.stateless_modules = frozenset(f"torch.nn.{n}" for n in classes.get("stateless_modules", ()))
        self.shape_preserving_modules = frozenset(
            f"torch.nn.{n}" for n in classes.get("shape_preserving_modules", ()))
        self.weighted_losses = frozenset(f"torch.nn.{n}" for n in classes.get("weighted_losses", ()))
        self.self_returning_module_methods = frozenset(classes.get("self_returning_module_methods", ()))
        self.module_api_methods = frozenset(classes.get("module_api_methods", ()))
        self.tensor_only_methods = frozenset(data.get("duck", {}).get("tensor_only_methods", ()))
        self.stamps = frozenset(data.get("timing", {}).get("stamps", ()))
        self.dtypes = frozenset(f"torch.{n}" for n in data.get("dtypes", {}).get("names", ()))
        self.cuda_initialising = frozenset(data.get("cuda", {}).get("initialises", ()))
        self.data_to_device = frozenset(data.get("copies", {}).get("data_to_device", ()))
        self.list_element_readers = frozenset(data.get("lists", {}).get("read_elements", ()))
        self.collectives = frozenset(data.get("distributed", {}).get("collectives", ()))
        writers = data.get("writers", {})
        self.writer_classes = frozenset(writers.get("classes", ()))
        self.writer_reads = {name: (int(at[0]), str(at[1])) for name, at in writers.get("reads", {}).items()}
        conversions = data.get("conversions", {})
        self.converting_builtins = frozenset(conversions.get("builtins", ()))
        self.converting_functions = frozenset(conversions.get("functions", ()))

    def method(self, name: str) -> Optional[OpSpec]:
        return self.methods.get(name)

    def function(self, qualname: str) -> Optional[OpSpec]:
        spec = self.functions.get(qualname)
        if spec is None and qualname.startswith("torch.nn.functional."):
            return None
        if spec is None and qualname.startswith("torch.Tensor."):
            return self.methods.get(qualname[len("torch.Tensor."):])
        return spec

    @staticmethod
    def is_module_class(qualname: str) -> bool:
        """`torch.nn.Linear`-style classes (capitalised names under torch.nn, not functional,
        init, utils or Parameter)."""
        if not qualname.startswith("torch.nn."):
            return False
        last = qualname.rsplit(".", 1)[-1]
        return last[:1].isupper() and not any(
            part in qualname for part in (".functional", ".init", ".utils.", "Parameter")
        )

    def is_loader(self, qualname: str) -> bool:
        return qualname in self.loaders

    def is_dataset_class(self, qualname: str) -> bool:
        last = qualname.rsplit(".", 1)[-1]
        return (qualname.startswith(self.dataset_prefixes) and last[:1].isupper()
                and qualname not in self.loaders and "Sampler" not in last)

    def is_optimizer_class(self, qualname: str) -> bool:
        last = qualname.rsplit(".", 1)[-1]
        return (qualname.startswith(self.optimizer_prefixes) and last[:1].isupper()
                and not qualname.startswith(self.scheduler_prefixes))

    def is_scheduler_class(self, qualname: str) -> bool:
        return qualname.startswith(self.scheduler_prefixes) and qualname.rsplit(".", 1)[-1][:1].isupper()


_table: Optional[ApiTable] = None


def _parse_toml(source: bytes) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib.loads(source.decode("utf-8"))


def torch_api() -> ApiTable:
    global _table
    if _table is None:
        # Parsed once per edit of the file: importing tomllib and parsing take ~6 ms of a
        # one-file run; the parsed copy is JSON beside devicelint's bytecode.
        from devicelint.datafile import parsed_once

        path = str(Path(__file__).with_name("torch_api.toml"))
        _table = ApiTable(parsed_once(path, _parse_toml, "devicelint-torch-api-1"))
    return _table
