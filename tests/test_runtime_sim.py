"""The runtime checker on the simulated device (CPU only, what CI runs)."""
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from runtime_helpers import DATA, run_probe


@pytest.mark.slow
def test_copies_and_syncs_counted_like_a_gpu_run():
    results, child = run_probe("probe_copies.py", {
        "rows": "DL001", "once": "DL001", "dtype": "DL001", "item": "DL004",
        "read-once": "DL004", "never": "DL001",
    }, "sim")
    assert child.result["device"] == "sim", child.stderr_tail
    rows = results["rows"]
    assert rows["status"] == "confirmed"
    assert rows["count"] == 512 and rows["bytes"] == 512 * 128 * 4
    assert rows["estimated"] is True
    assert rows["measured_ms"] > rows["counterfactual_ms"] > rows["counterfactual_pinned_ms"]
    assert results["once"]["status"] == "refuted"  # one copy: nothing to batch
    assert results["dtype"]["status"] == "refuted"  # .to(dtype) is no transfer
    assert results["item"]["status"] == "confirmed" and results["item"]["count"] == 20
    assert results["read-once"]["status"] == "refuted"  # float() of a Python number
    assert results["never"]["status"] == "not-reached"
    # 512 rows + one batch, no copy for the dtype move; 20 item syncs
    assert child.result["sim_counts"]["copies"]["h2d"] == 513
    assert child.result["sim_counts"]["syncs"] == 20


@pytest.mark.slow
def test_mismatch_reproduced_with_pytorch_message():
    results, child = run_probe("probe_mismatch.py", {
        "unmoved": "DL002", "moved": "DL002", "scalar": "DL015", "mismatch": "DL015",
    }, "sim")
    # The exact texts a real GPU gave (docs/confirmations.md)
    assert results["unmoved"]["status"] == "confirmed"
    assert results["unmoved"]["error"] == (
        "Expected all tensors to be on the same device, but got mat1 is on cuda:0, different "
        "from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)")
    assert results["moved"]["status"] == "refuted"
    assert results["scalar"]["status"] == "refuted"  # a 0-dim CPU tensor is legal
    assert results["mismatch"]["error"] == (
        "Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!")
    # the uncaught mismatch ended the script: a result, not a crash of devicelint
    assert child.result["crash"]["type"] == "RuntimeError"
    assert child.result["crash"]["line"] == 17


@pytest.mark.slow
def test_views_failed_latent_and_fine():
    results, _ = run_probe("probe_view.py", {
        "latent": "DL003", "split": "DL003", "fails": "DL003"}, "sim")
    assert results["latent"]["status"] == "confirmed"
    assert results["latent"]["latent"]["size"] == [2, 4, 2, 8]
    assert results["split"]["status"] == "refuted"
    assert results["fails"]["status"] == "confirmed"
    assert "view size is not compatible" in results["fails"]["error"]


def test_extra_rules():
    results, _ = run_probe("probe_misc.py", {
        "discarded": "DL006", "noop": "DL006", "empty-cache": "DL011", "unsynced": "DL012",
        "synced": "DL012", "pageable": "DL009",
    }, "sim")
    assert results["discarded"]["status"] == "confirmed"
    assert results["noop"]["status"] == "refuted"
    assert results["empty-cache"]["status"] == "confirmed"
    assert results["empty-cache"]["count"] == 3
    # The simulated device runs ops synchronously: it sees the unsynced device work but
    # cannot tell whether a GPU would still be running it (docs/runtime.md).
    assert results["unsynced"]["status"] == "inconclusive"
    assert results["unsynced"]["unsynced"] == 1
    assert results["synced"]["status"] == "inconclusive"
    assert results["synced"]["unsynced"] == 0
    assert results["pageable"]["status"] == "confirmed"


@pytest.mark.slow
def test_crashing_child_is_a_result():
    results, child = run_probe("probe_crash.py", {"before": "DL004", "after": "DL004"}, "sim")
    assert child.result["crash"] == {
        "type": "ValueError", "message": "the user's bug",
        "path": str(DATA / "probe_crash.py"), "line": 7}
    assert child.result["exit_code"] == 1
    assert results["before"]["status"] == "refuted"
    assert results["after"]["status"] == "not-reached"


@pytest.mark.slow
def test_timeout_stops_the_child_and_keeps_what_it_saw():
    results, child = run_probe("probe_sleep.py", {"loop": "DL004"}, "sim", timeout=12)
    assert child.timed_out
    assert child.result["stopped"] == "timed out"
    assert results["loop"]["status"] == "confirmed"
    assert results["loop"]["count"] >= 2


def test_plain_linting_never_imports_torch():
    code = ("import sys; from devicelint.runner import run_lint; "
            "import devicelint.runtime.command; run_lint(['fixtures']); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.slow
def test_confirm_command_json(tmp_path):
    from devicelint.runtime.command import confirm

    script = tmp_path / "bad_script.py"
    script.write_text(
        "import torch\nimport torch.nn as nn\n"
        "model = nn.DataParallel(nn.Linear(4, 2))\n"
        "print(model(torch.randn(3, 4)).shape)\n"
    )
    result = CliRunner().invoke(confirm, [str(script), "--device", "sim", "--format", "json",
                                          "--", sys.executable, str(script)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    (finding,) = [f for f in data["findings"] if f["code"] == "DL005"]
    assert finding["confirmation"]["status"] == "inconclusive"
    assert "2 real GPUs" in finding["confirmation"]["summary"]
    assert data["runs"][0]["exit_code"] == 0


def test_non_python_command_is_reported(tmp_path):
    from devicelint.runtime.command import confirm

    script = tmp_path / "x.py"
    script.write_text("import torch.nn as nn\nm = nn.DataParallel(nn.Linear(1, 1))\n")
    result = CliRunner().invoke(confirm, [str(script), "--device", "sim", "--", "ls", "-l"])
    assert "can only run Python commands" in result.output


SIM_MORE = """\
import os
import torch
import torch.nn as nn
from torch.cuda import empty_cache
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # probe: late-env


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


try:
    Net()(torch.randn(2, 8, device=device))  # probe: forward-mismatch
except RuntimeError:
    pass
layers = [nn.Linear(4, 4) for _ in range(3)]
for layer in layers:
    layer.to(device)  # probe: module-to
model = Net().to(device=device, dtype=torch.float32)
model(torch.randn(2, 8).to(device))
for _ in range(2):
    empty_cache()  # probe: bare-empty-cache
    torch.cuda.memory.empty_cache()  # probe: memory-empty-cache
loader = DataLoader(TensorDataset(torch.randn(8, 8)), batch_size=4, pin_memory=True)
for (batch,) in loader:
    model(batch.to(device, non_blocking=True))  # probe: pinned-loader
staging = torch.empty(4, 8, pin_memory=True)
for _ in range(2):
    staging.to(device, non_blocking=True)  # probe: pinned-factory
inputs = torch.randn(4, 8)
for epoch in range(3):
    batch = inputs.to(device)  # probe: same-tensor
table = torch.arange(10.0)
try:
    table[torch.tensor([1, 2], device=device)]  # probe: cuda-index
except RuntimeError as error:
    print(error)
"""


@pytest.mark.slow
def test_sim_attribution_and_cuda_surface(tmp_path):
    from devicelint.finding import Finding
    from devicelint.runtime.launch import run_child
    from devicelint.runtime.plan import plan_for

    script = tmp_path / "probe_more.py"
    script.write_text(SIM_MORE)
    codes = {"late-env": "DL013", "forward-mismatch": "DL002", "module-to": "DL001",
             "bare-empty-cache": "DL011", "memory-empty-cache": "DL011",
             "pinned-loader": "DL009", "pinned-factory": "DL009", "cuda-index": "DL015",
             "same-tensor": "DL001"}
    findings, lines = [], {}
    for number, text in enumerate(SIM_MORE.splitlines(), 1):
        if "# probe: " in text:
            tag = text.split("# probe: ")[1].strip()
            lines[tag] = number
            findings.append(Finding(codes[tag], "probe", str(script), number, 1, number, 1, tag))
    child = run_child(plan_for(findings, [str(script)], "sim"), 120, quiet_output=True)
    assert child.result and not child.result["crash"], child.stderr_tail
    by_line = {v["line"]: v["confirmation"] for v in child.result["verdicts"]}
    results = {tag: by_line[line] for tag, line in lines.items()}
    # is_available() initialised the driver before the variable was set
    assert results["late-env"]["status"] == "confirmed"
    # raised inside forward (another line of the file): belongs to the flagged call
    assert results["forward-mismatch"]["status"] == "confirmed"
    assert "mat1 is on cuda:0" in results["forward-mismatch"]["error"]
    # nn.Module.to moves parameters: not a per-row copy
    assert results["module-to"]["status"] == "refuted"
    # the same tensor copied each epoch: nothing to batch (hoisting is another matter)
    assert results["same-tensor"]["status"] == "refuted"
    assert "same host data" in results["same-tensor"]["summary"]
    assert results["bare-empty-cache"]["count"] == 2
    assert results["memory-empty-cache"]["status"] == "confirmed"
    assert results["memory-empty-cache"]["count"] == 2
    # DataLoader(pin_memory=True) and torch.empty(pin_memory=True) give pinned memory
    assert results["pinned-loader"]["status"] == "refuted"
    assert results["pinned-factory"]["status"] == "refuted"
    assert results["cuda-index"]["status"] == "confirmed"
    assert results["cuda-index"]["error"].startswith("indices should be either on cpu")


@pytest.mark.slow
def test_a_sync_in_a_helper_counts_at_the_flagged_call():
    # DL004 reports `read(...)` at its call in the loop; the `.item()` runs on the helper's
    # own line, which is not flagged: the flagged caller's line gets it.
    results, child = run_probe("probe_helper_sync.py", {"call": "DL004"}, "sim")
    assert results["call"]["status"] == "confirmed", child.stderr_tail
    assert results["call"]["count"] == 10


def test_type_and_type_as_to_another_device_are_copies():
    # `.type(torch.FloatTensor)` of a CUDA tensor copies it to the host (a sync);
    # `.type(torch.cuda.FloatTensor)` of a host tensor and `.type_as(t)` of a CUDA t copy to the
    # GPU, so a `.to(device)` after them does nothing; `.type(dtype)`, `.type()` naming the type
    # and `.type_as(t)` of a host t stay where they are.
    codes = {"to-cpu-type": "DL004", "to-dtype": "DL004", "name": "DL004",
             "to-cuda-type": "DL007", "type-as": "DL007", "type-as-then-to": "DL007",
             "type-as-host": "DL007"}
    results, child = run_probe("probe_type_copy.py", codes, "sim")
    assert results["to-cpu-type"]["status"] == "confirmed", child.stderr_tail
    assert results["to-cpu-type"]["count"] == 10
    assert results["to-dtype"]["status"] == "refuted"
    assert results["name"]["status"] == "refuted"
    for tag in ("to-cuda-type", "type-as", "type-as-then-to"):
        assert results[tag]["status"] == "confirmed", (tag, child.stderr_tail)
        assert results[tag]["count"] == 10, (tag, results[tag])
    assert results["type-as-host"]["status"] == "refuted"


def test_an_indexed_assignment_into_a_cpu_tensor_is_a_sync():
    # `host[i] = cuda_value` (Tensor.__setitem__) is a blocking device->host copy; host
    # values into a host tensor, or device values into a device tensor, are not.
    codes = {"scalar-to-host": "DL004", "row-to-host": "DL004", "host-to-host": "DL004",
             "device-to-device": "DL004"}
    results, child = run_probe("probe_setitem_copy.py", codes, "sim")
    for tag in ("scalar-to-host", "row-to-host"):
        assert results[tag]["status"] == "confirmed", child.stderr_tail
        assert results[tag]["count"] == 10 and results[tag]["kinds"] == {"setitem": 10}
    assert results["host-to-host"]["status"] == "refuted"
    assert results["device-to-device"]["status"] == "refuted"
