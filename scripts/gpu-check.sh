#!/usr/bin/env bash
# Everything kprof checks and measures on a real GPU, in one call (the lent H200, or any CUDA box).
#
#   KPROF_COMMIT=$(git rev-parse --short HEAD) bash scripts/gpu-check.sh   # logs + summary.md under $OUT
#   KPROF_RECORD=1 ...   also records real compute-sanitizer/ncu output for tests/data/
#
# It installs what the machine lacks from wheels carried in .whl/ (the device machine has no
# network: see docs/gpu.md), runs the GPU test suite with --require-gpu (a skip is a failure
# there), runs every ladder kernel at its default size, and writes summary.md with the date, GPU,
# driver and the exact commands. Copy summary.md to docs/results/ to publish it.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOGS=$OUT/logs
mkdir -p "$LOGS"
cd "$(dirname "$0")/.."
ROOT=$PWD
export PYTHONUNBUFFERED=1
export KPROF_CACHE_DIR=${KPROF_CACHE_DIR:-/tmp/kprof-cache}

if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >"$LOGS/pip.txt" 2>&1 || { echo "wheel install failed"; cat "$LOGS/pip.txt"; }
    export PYTHONPATH=/tmp/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
fi
KPROF="python3 -m kprof"
status=0
step() {  # step NAME CMD...: run, log to $LOGS/NAME.txt, remember failures
    local name=$1; shift
    local t0=$SECONDS
    "$@" >"$LOGS/$name.txt" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$LOGS/steps.txt"
    [ $rc -eq 0 ] || status=1
    return $rc
}

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    echo "${KPROF_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)} (pass KPROF_COMMIT: .git does not travel to the device)"
    python3 --version
} >"$LOGS/env.txt" 2>&1

step doctor $KPROF doctor
step build $KPROF build --all
step pytest python3 -m pytest -v --require-gpu -p no:cacheprovider tests
mkdir -p "$LOGS/run"
for name in vector_add reduce_sum naive_matmul tiled_matmul regblock_matmul rmsnorm softmax; do
    step "run-$name" $KPROF run "$name" --json
    cp "$LOGS/run-$name.txt" "$LOGS/run/$name.json"
done

if [ "${KPROF_RECORD:-0}" = 1 ]; then
    step record python3 scripts/record_tool_output.py "$LOGS/record"
fi

python3 scripts/gpu_summary.py "$LOGS" >"$OUT/summary.md" 2>"$LOGS/summary-errors.txt" || status=1
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs
cp "$LOGS/pytest.txt" "$OUT/pytest.txt"
cat "$OUT/summary.md"
exit $status
