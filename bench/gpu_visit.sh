#!/bin/bash
# One device-machine visit for the runtime checker: cost table, GPU tests, training script,
# fixtures, overhead. Writes logs to $OUT. Usage: bash bench/gpu_visit.sh
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > $OUT/install.txt 2>&1 || cat $OUT/install.txt
export PYTHONPATH=/tmp/site:.
{ nvidia-smi -L; python3 -c 'import torch, sys; print(torch.__version__, torch.cuda.get_device_name(), torch.cuda.device_count(), sys.version)'; } 2>&1 | tee $OUT/env.txt
[ -n "$SKIP_COSTS" ] || python3 -m devicelint.runtime.costs --write $OUT/costs.json > /dev/null 2>$OUT/costs.err; cat $OUT/costs.json
[ -n "$SKIP_TESTS" ] || timeout 150 python3 -m pytest -q -p no:cacheprovider -s tests/test_runtime_gpu.py > $OUT/gpu_tests.txt 2>&1; tail -15 $OUT/gpu_tests.txt
timeout 120 python3 -m devicelint.runtime.command tests/data/runtime/train_script.py --device cuda --format json -o $OUT/train.json -- python3 tests/data/runtime/train_script.py > $OUT/train.log 2>&1; echo "train rc=$?"
[ -n "$SKIP_OVERHEAD" ] || timeout 240 python3 bench/overhead.py > $OUT/overhead.txt 2>&1; cat $OUT/overhead.txt
timeout ${FIXTURE_LIMIT:-200} python3 -m devicelint.runtime.command fixtures/ --device cuda --jobs 6 --timeout 60 --format json -o $OUT/fixtures.json > $OUT/fixtures.log 2>&1; echo "fixtures rc=$?"
ls -la $OUT
