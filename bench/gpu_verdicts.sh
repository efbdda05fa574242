#!/usr/bin/env bash
# Record what a real GPU decides for every fixture finding: tests/data/gpu-verdicts.json
# (device name and torch version inside), which tests/test_confirm_fixtures.py compares with
# the simulated device. Re-record whenever fixtures change. Run on a machine with a GPU, from
# the repository root:
#   COMMIT=$(git rev-parse HEAD) bash bench/gpu_verdicts.sh [OUT.json] [RAW.json]
set -u
out=${1:-tests/data/gpu-verdicts.json}
raw=${2:-$(mktemp --suffix=.json)}
command="python3 -m devicelint.cli confirm fixtures --device cuda --jobs ${JOBS:-4} --timeout 120 --format json -o $raw"
echo "$command" >&2
# Exit 1 means a finding was refuted or a good fixture showed its pitfall: still a record.
$command
status=$?
if [ "$status" -gt 1 ]; then
    echo "confirm failed with exit code $status" >&2
    exit "$status"
fi
CONFIRM_COMMAND="$command" python3 bench/gpu_verdicts.py "$raw" "$out"
