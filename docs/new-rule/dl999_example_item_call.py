"""The template of a rule (CONTRIBUTING.md): copy it to rules/dlNNN_<name>.py, then replace
the code, the name, the class, the docs, the detection and the probe with your own."""

from __future__ import annotations

import libcst as cst

from devicelint.rule import Rule
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch


class ExampleItemCall(Rule):
    """## What it does
    Flags `.item()` calls: each one copies a value from the device to the host and waits for
    the device to finish the work queued before it.

    ## Why is this bad?
    A template's reason. A real rule states the measured cost here (command, device, figures).

    ## Example
    ```python
    total = values.sum().item()
    ```

    ## Use instead
    ```python
    total = values.sum()  # read it once, where the value is needed
    ```

    ## Fix safety
    No fix.
    """

    code = "DL999"
    name = "example-item-call"
    summary = "`.item()` reads a device value back to the host"
    default_enabled = False  # a new rule starts opt-in; enable it once its precision is measured
    tokens = (".item(",)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
            self.report(node)

    # -- devicelint confirm --------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        if not rec.syncs.count:
            return run.base("refuted", "the line ran but read nothing back from the device")
        return run.base("confirmed", f"{rec.syncs.count} host read(s) of device values",
                        count=rec.syncs.count)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.SYNCS,), whole_file=True)
