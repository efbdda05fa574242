#!/bin/bash
# The 2-GPU visit: DL005 fixtures under `confirm` (DataParallel vs DDP). Logs to $OUT.
# One command on a machine with 2 GPUs, from the repository root, with the libcst wheel
# (and its dependencies) in .whl/:  OUT=/some/dir bash bench/gpu_visit_dp.sh
OUT=${OUT:-$(mktemp -d)}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > $OUT/install.txt 2>&1 || cat $OUT/install.txt
export PYTHONPATH=/tmp/site:.
{ nvidia-smi -L; python3 -c 'import torch, cloudpickle; print(torch.__version__, torch.cuda.get_device_name(), torch.cuda.device_count())'; } 2>&1 | tee $OUT/env.txt
timeout 400 python3 -m devicelint.runtime.command fixtures/DL005 --device cuda --jobs 1 --timeout 180 --format json -o $OUT/dl005.json > $OUT/dl005.log 2>&1; echo "dl005 rc=$?"
timeout 150 python3 -m devicelint.runtime.command tests/data/runtime/train_script.py --device cuda --format json -o $OUT/train.json -- python3 tests/data/runtime/train_script.py > $OUT/train.log 2>&1; echo "train rc=$?"
tail -5 $OUT/dl005.log
# One line per DL005 finding: the DataParallel vs DDP figures the probe measured.
python3 - "$OUT/dl005.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
print("device:", data.get("device_name"))
for f in data["findings"]:
    if f["code"] == "DL005":
        c = f["confirmation"]
        print(f"{f['path']}:{f['line']} {c['status']}: {c.get('summary', '')}")
PY
