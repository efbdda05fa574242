"""DL012: a host read of a value the model cannot place, but that is computed from device
values, waits for the GPU (3D-ResNets validation.py:42, pytorch-beginner
Logistic_Regression.py:94, held-out false alarms). A read of a value computed only from host
data is no wait."""

from __future__ import annotations

from devicelint.runner import lint_file

STEP = '''import time


def validate(model, inputs, targets, criterion, device):
    start = time.time()
    targets = targets.to(device, non_blocking=True)
    outputs = model(inputs)
    loss = criterion(outputs, targets)
    value = {read}
    return value, time.time() - start
'''


def _dl012(tmp_path, source: str) -> list[int]:
    path = tmp_path / "t.py"
    path.write_text(source)
    return [f.line for f in lint_file(str(path), str(path), ["DL012"], 10**7) if f.code == "DL012"]


def test_item_of_a_loss_of_device_data_is_a_wait(tmp_path):
    assert _dl012(tmp_path, STEP.format(read="loss.item()")) == []


def test_an_f_string_of_device_data_is_a_wait(tmp_path):
    assert _dl012(tmp_path, STEP.format(read='f"{loss:.3f}"')) == []


def test_a_read_of_host_data_is_no_wait(tmp_path):
    assert _dl012(tmp_path, STEP.format(read="criterion(inputs, inputs).item()")) == [10]


def test_backward_of_a_loss_of_device_data_is_work(tmp_path):
    # 3D-ResNets training.py:48: the loss is read, then its backward is queued before the stamp.
    source = STEP.format(read="loss.item()").replace(
        "    return value, time.time() - start", "    loss.backward()\n    return value, time.time() - start")
    assert _dl012(tmp_path, source) == [11]
