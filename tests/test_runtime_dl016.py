"""DL016's runtime probe on the simulated device: the same host data copied on every iteration
(the same tensor, or a small constant rebuilt each time) and copies back to the host each
iteration are confirmed; new data each time is confirmed only as a round trip's upload, when the
file read device data back; one copy is refuted."""

import pytest

from runtime_helpers import run_probe


@pytest.mark.slow
def test_repeated_transfers_on_the_simulated_device():
    results, child = run_probe("probe_repeated.py", {
        "same": "DL016", "rebuilt": "DL016", "back": "DL016", "fresh": "DL016",
        "read": "DL004", "reupload": "DL016", "once": "DL016",
        "empty": "DL016", "emptyback": "DL016",
    }, "sim")
    assert child.result and child.result["device"] == "sim", child.stderr_tail
    same = results["same"]
    assert same["status"] == "confirmed" and same["count"] == 5 and same["distinct"] == 1
    assert same["counterfactual_ms"] < same["measured_ms"]
    # a 0-dim constant rebuilt on every iteration is the same data by value
    assert results["rebuilt"]["status"] == "confirmed" and results["rebuilt"]["distinct"] == 1
    assert results["back"]["status"] == "confirmed" and results["back"]["count"] == 5
    # new data each time, and a watched read back on the line next to it: a round trip
    assert results["reupload"]["status"] == "confirmed"
    assert "read device data back" in results["reupload"]["summary"]
    assert results["once"]["status"] == "refuted"
    # an empty tensor made on, or moved off, the device copies no byte: no repeated transfer
    assert results["empty"]["status"] == "refuted", results["empty"]
    assert results["emptyback"]["status"] == "refuted", results["emptyback"]


@pytest.mark.slow
def test_new_data_without_a_watched_read_is_inconclusive():
    results, child = run_probe("probe_repeated.py", {"fresh": "DL016", "once": "DL016"}, "sim")
    assert child.result, child.stderr_tail
    assert results["fresh"]["status"] == "inconclusive"
