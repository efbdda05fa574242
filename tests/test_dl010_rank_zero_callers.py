"""DL010: index 0 in a function that the file calls only from rank 0's branch, in processes
that torch.multiprocessing.spawn starts and that set their GPU to their process index, is rank
0's own GPU (the VITS evaluate() held-out class). Any path another rank can take keeps it
flagged: a call outside the branch, a reference that is not a call, a GPU that is not the
process index, a package module whose callers live elsewhere."""

from __future__ import annotations

from devicelint.runner import lint_file

SPAWNED = '''import torch
import torch.multiprocessing as mp


def evaluate(batch):
    return batch.cuda(0)


def train(rank, batch):
    if rank == 0:
        evaluate(batch)


def run(rank, batch):
    torch.cuda.set_device(rank)
    if rank == 0:
        train(rank, batch)
    else:
        train(rank, batch)


def main():
    mp.spawn(run, args=(torch.ones(2),), nprocs=2)
'''
LINE = 6  # `return batch.cuda(0)`


def _dl010(tmp_path, source: str, name: str = "train.py") -> list[int]:
    path = tmp_path / name
    path.write_text(source)
    return [f.line for f in lint_file(str(path), str(path), ["DL010"], 10**7) if f.code == "DL010"]


def test_a_helper_called_only_by_spawned_rank_zero_is_silent(tmp_path):
    assert _dl010(tmp_path, SPAWNED) == []


def test_the_same_process_running_the_worker_as_process_zero_is_silent(tmp_path):
    source = SPAWNED + '\n\nif __name__ == "__main__":\n    run(0, torch.ones(2))\n'
    assert _dl010(tmp_path, source) == []


def test_a_call_any_rank_reaches_is_flagged(tmp_path):
    source = SPAWNED.replace("        evaluate(batch)\n", "        evaluate(batch)\n    evaluate(batch)\n")
    assert _dl010(tmp_path, source) == [LINE]


def test_a_helper_handed_on_is_flagged(tmp_path):
    source = SPAWNED + "\n\nHOOKS = [evaluate]\n"
    assert _dl010(tmp_path, source) == [LINE]


def test_without_set_device_to_the_process_index_it_is_flagged(tmp_path):
    assert _dl010(tmp_path, SPAWNED.replace("set_device(rank)", "set_device(rank + 1)")) == [LINE]
    assert _dl010(tmp_path, SPAWNED.replace("    torch.cuda.set_device(rank)\n", "")) == [LINE]


def test_a_rank_that_is_not_the_process_index_is_flagged(tmp_path):
    source = SPAWNED.replace("        train(rank, batch)\n    else:", "        train(rank, batch)\n    else:\n        train(len(batch), batch)")
    assert _dl010(tmp_path, source) == [LINE]


def test_an_unspawned_rank_parameter_decides_nothing(tmp_path):
    source = SPAWNED.replace("mp.spawn(run, args=(torch.ones(2),), nprocs=2)", "run(3, torch.ones(2))")
    source = "import torch.distributed as dist\n" + source  # still several processes: the evidence
    assert _dl010(tmp_path, source) == [LINE + 1]


def test_a_package_module_keeps_index_zero_flagged(tmp_path):
    assert _dl010(tmp_path, "from . import config\n" + SPAWNED) == [LINE + 1]
