#!/bin/bash
# Run bench/throughput.py on the device machine's CPU, pinned to 2 cores (a quiet stand-in
# for the 2-core development machine). Needs .whl (libcst for Python 3.12) and .benchcarry
# (TorchFix + its libcst under tf/, ruff under tools/, a tarball of bench/.corpora, and
# optionally under before/ a wheel of an earlier devicelint to compare with) carried. Usage:
#   bash bench/device_throughput.sh [throughput.py options]
set -e
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tf .benchcarry/tf/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ruffsite .benchcarry/tools/*.whl
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /dev/null 2>&1
mkdir -p /tmp/tools/bin bench/.corpora
printf '#!/bin/sh\nPYTHONPATH=/tmp/tf exec python3 -m torchfix "$@"\n' > /tmp/tools/bin/torchfix
ln -sf /tmp/ruffsite/bin/ruff /tmp/tools/bin/ruff
chmod +x /tmp/tools/bin/torchfix
tar xzf .benchcarry/corpora.tgz -C bench/.corpora
baseline=()
if ls .benchcarry/before/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/before .benchcarry/before/*.whl
    baseline=(--baseline-site /tmp/before)
fi
export PYTHONPATH=/tmp/site
lscpu | grep -E "Model name|^CPU\(s\)" ; python3 --version
taskset -c 0,1 python3 bench/throughput.py --tools-venv /tmp/tools "${baseline[@]}" "$@"
