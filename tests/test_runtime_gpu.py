"""The runtime checker on a real GPU (skipped without CUDA; run on the device machine)."""
import pytest

from runtime_helpers import run_probe

pytestmark = pytest.mark.gpu


def test_copies_and_syncs_measured_on_gpu():
    results, child = run_probe("probe_copies.py", {
        "rows": "DL001", "once": "DL001", "dtype": "DL001", "item": "DL004",
        "read-once": "DL004", "never": "DL001",
    }, "cuda")
    assert child.result["device"] == "cuda", child.stderr_tail
    rows = results["rows"]
    assert rows["status"] == "confirmed" and rows["count"] == 512
    assert rows["measured_ms"] > rows["counterfactual_ms"] > 0
    assert "estimated" not in rows
    assert results["once"]["status"] == "refuted"
    assert results["dtype"]["status"] == "refuted"
    assert results["item"]["status"] == "confirmed" and results["item"]["count"] == 20
    assert results["read-once"]["status"] == "refuted"
    assert results["never"]["status"] == "not-reached"


def test_real_mismatch_error_on_gpu():
    results, child = run_probe("probe_mismatch.py", {
        "unmoved": "DL002", "moved": "DL002", "scalar": "DL015", "mismatch": "DL015",
    }, "cuda")
    assert results["unmoved"]["status"] == "confirmed"
    assert "Expected all tensors to be on the same device" in results["unmoved"]["error"]
    assert results["moved"]["status"] == "refuted"
    assert results["scalar"]["status"] == "refuted"
    assert results["mismatch"]["status"] == "confirmed"
    print("GPU DL002 error:", results["unmoved"]["error"])
    print("GPU DL015 error:", results["mismatch"]["error"])


def test_views_on_gpu():
    results, _ = run_probe("probe_view.py", {
        "latent": "DL003", "split": "DL003", "fails": "DL003"}, "cuda")
    assert results["latent"]["status"] == "confirmed" and "latent" in results["latent"]
    assert results["split"]["status"] == "refuted"
    assert results["fails"]["status"] == "confirmed"


def test_misc_probes_on_gpu():
    results, _ = run_probe("probe_misc.py", {
        "discarded": "DL006", "noop": "DL006", "empty-cache": "DL011", "unsynced": "DL012",
        "synced": "DL012", "pageable": "DL009",
    }, "cuda")
    assert results["discarded"]["status"] == "confirmed"
    assert results["noop"]["status"] == "refuted"
    assert results["empty-cache"]["status"] == "confirmed"
    assert results["synced"]["status"] == "refuted"
    assert results["pageable"]["status"] == "confirmed"
    print("GPU DL012 unsynced:", results["unsynced"])
