#!/usr/bin/env bash
# Everything kprof checks and measures on a real GPU, in one call (the lent H200, or any CUDA box).
#
#   KPROF_COMMIT=$(git rev-parse --short HEAD) bash scripts/gpu-check.sh [all|tests|measure]
#       all (default): both; tests: doctor, build, pytest --require-gpu;
#       measure: kprof run of the ladder, kprof sanitize and kprof cases with their wall times.
#   KPROF_RECORD=1 ...   also records real compute-sanitizer/ncu output for tests/data/
#
# It installs what the machine lacks from wheels carried in .whl/ (the device machine has no
# network: see docs/gpu.md), runs the GPU test suite with --require-gpu (a skip is a failure
# there), and writes summary.md (date, GPU, driver, commit, exact commands) and logs.tar.gz under
# $OUT (default ./gpu-out). Copy summary.md to docs/results/ to publish it.
set -u
WHAT=${1:-all}  # all, tests, measure, bench, or several joined by '+', e.g. tests+bench
OUT=${OUT:-$PWD/gpu-out}
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
# cupti-python loads libcupti: if it cannot find it, point the loader at the toolkit's copy.
if ! python3 -c "from cupti import cupti; cupti.get_timestamp()" >"$LOGS/cupti.txt" 2>&1; then
    lib=$(find /usr/local/cuda*/ /opt/nvidia -name 'libcupti.so*' 2>/dev/null | head -1)
    [ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    python3 -c "from cupti import cupti; cupti.get_timestamp(); print('cupti ok via', '$lib')" >>"$LOGS/cupti.txt" 2>&1
fi
KPROF="python3 -m kprof"
status=0
T_START=$(date +%s)
BUDGET_S=${BUDGET_S:-100000}  # skip the steps that would start after this many seconds (a device call has a limit)
step() {  # step NAME CMD...: run, log to $LOGS/NAME.txt, record exit code and wall time
    local name=$1; shift
    local t0 ms
    if [ $(( $(date +%s) - T_START )) -ge "$BUDGET_S" ]; then
        printf '%s skipped: the %ss budget was spent: %s\n' "$name" "$BUDGET_S" "$*" | tee -a "$LOGS/steps.txt"
        status=1
        return 1
    fi
    t0=$(date +%s%N)
    "$@" >"$LOGS/$name.txt" 2>&1
    local rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '%s rc=%s %d.%03ds: %s\n' "$name" "$rc" $((ms / 1000)) $((ms % 1000)) "$*" | tee -a "$LOGS/steps.txt"
    [ $rc -eq 0 ] || status=1
    return $rc
}
sweep() {  # sweep NAME KERNEL P=V1,V2[:P2=V...] ARGS...: one kprof bench --param sweep, no baseline,
    local name=$1 kern=$2 params=$3; shift 3  # JSON to $LOGS/bench/NAME-<params as a tag>.json
    local tag
    tag=$(echo "$params" | tr ':=,' '___')
    step "$name-$tag" sh -c "$KPROF bench $kern --param ${params//:/ --param } $* --baseline none --json > $LOGS/bench/$name-$tag.json"
}
sass() {  # sass KERNEL: the spec's cubin disassembled to $LOGS/sass/KERNEL.sass, with its FMA loops' shape
    local cubin
    mkdir -p "$LOGS/sass"
    cubin=$(python3 -c "from kprof import build, catalog; print(build.build(catalog.load('$1')).cubin)")
    cuobjdump -sass "$cubin" > "$LOGS/sass/$1.sass" 2>&1
    python3 scripts/sass_loops.py "$LOGS/sass/$1.sass" >> "$LOGS/sass/loops.txt" 2>&1
}

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    echo "${KPROF_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)} (pass KPROF_COMMIT: .git does not travel to the device)"
    python3 --version
} >"$LOGS/env.txt" 2>&1

if [ "$WHAT" = all ] || [[ "+$WHAT+" == *"+tests+"* ]]; then
    step doctor $KPROF doctor
    step build $KPROF build --all
    XDIST=""
    python3 -c "import xdist" 2>/dev/null && XDIST="-n 8 --dist loadgroup"
    step pytest python3 -m pytest -v -ra --require-gpu -p no:cacheprovider $XDIST tests
    cp "$LOGS/pytest.txt" "$OUT/pytest.txt"
fi

if [[ "+$WHAT+" == *"+recheck+"* ]]; then  # the GPU tests named by RECHECK (a pytest -k expression)
    step recheck python3 -m pytest -v -ra --require-gpu -p no:cacheprovider -n 8 -k "${RECHECK:-unfused}" tests
    cp "$LOGS/recheck.txt" "$OUT/pytest-recheck.txt"
fi

if [[ "+$WHAT+" == *"+verify+"* ]]; then  # quick: every kernel verified at every size, no sanitizers
    XDIST=""
    python3 -c "import xdist" 2>/dev/null && XDIST="-n 8"
    step verify python3 -m pytest -q -ra --require-gpu -p no:cacheprovider $XDIST tests/test_gpu.py
fi

MATMULS="naive_matmul tiled_matmul regblock_matmul vec_matmul warptile_matmul dbuf_matmul async_matmul tuned_matmul streamk_matmul"
if [ "$WHAT" = all ] || [[ "+$WHAT+" == *"+matmul+"* ]]; then  # issue 6: the matmul ladder
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench" "$LOGS/sass"
    step peak $KPROF peak --refresh
    for k in $MATMULS; do  # what the compiler made of each step: registers, spills, 16-byte accesses
        sass "$k"
        printf '%s FFMA=%s LDS=%s LDS.128=%s LDG=%s LDG.128=%s STS=%s STG=%s STG.128=%s LDGSTS=%s BAR=%s\n' "$k" \
            "$(grep -c 'FFMA' "$LOGS/sass/$k.sass")" "$(grep -cE 'LDS(\.|\s)' "$LOGS/sass/$k.sass")" \
            "$(grep -c 'LDS.128' "$LOGS/sass/$k.sass")" "$(grep -cE 'LDG\.' "$LOGS/sass/$k.sass")" \
            "$(grep -c 'LDG.E.128' "$LOGS/sass/$k.sass")" "$(grep -cE 'STS(\.|\s)' "$LOGS/sass/$k.sass")" \
            "$(grep -cE 'STG\.' "$LOGS/sass/$k.sass")" "$(grep -c 'STG.E.128' "$LOGS/sass/$k.sass")" \
            "$(grep -c 'LDGSTS' "$LOGS/sass/$k.sass")" "$(grep -c 'BAR.SYNC' "$LOGS/sass/$k.sass")" >> "$LOGS/sass/counts.txt"
    done
    # Tuning sweeps (kprof bench --param), no baseline; the fastest point is the tuned matmul.
    # MATMUL_SWEEPS: "KERNEL:P=V1,V2[:P2=V]..." separated by spaces, replacing the default list.
    for s in ${MATMUL_SWEEPS:-dbuf_matmul:BK=8,16 dbuf_matmul:BK=16:GROUP=1,16 dbuf_matmul:BK=16:WN=64:RN=4:MINB=2 async_matmul:BK=8,16 async_matmul:BK=16:WN=64:RN=4:MINB=2 async_matmul:BK=16:BN=256:WN=64:RN=4:MINB=1}; do
        sweep "sweep-${s%%:*}" "${s%%:*}" "${s#*:}" --size M,N,K=4096 --max-time 1
    done
    BEST=$(python3 scripts/pick_best.py "$LOGS"/bench/sweep-*.json)
    echo "tuned matmul: $BEST" | tee "$LOGS/bench/best.txt"
    # The ladder at 4096 (every step at its spec's defaults against cuBLAS in the same run), then the
    # tuned point against cuBLAS across sizes and a non-square shape, then ncu on every step.
    step bench-matmul-ladder sh -c "$KPROF bench $MATMULS --size M,N,K=4096 --max-time 1 --json --plot $OUT/bench-matmul-ladder.png > $LOGS/bench/matmul-ladder.json"
    step bench-matmul-best sh -c "$KPROF bench $BEST --size M,N,K=1024,2048,4096,8192 --max-time 2 --json --plot $OUT/bench-matmul-best.png > $LOGS/bench/matmul-best.json"
    step bench-matmul-best-nonsquare sh -c "$KPROF bench $BEST --size M=8192 --size N=2048 --size K=4096 --max-time 2 --json > $LOGS/bench/matmul-best-nonsquare.json"
    step profile-matmul-ladder sh -c "$KPROF profile $MATMULS --size M=4096 N=4096 K=4096 --json --plot $OUT/roofline-matmul-ladder.png > $LOGS/profile-matmul-ladder.json"
    step profile-matmul-best sh -c "$KPROF profile $BEST --size M=4096 N=4096 K=4096 --json > $LOGS/profile-matmul-best.json"
fi

if [[ "+$WHAT+" == *"+tune6+"* ]]; then  # issue 6: tuned_matmul's variants against cuBLAS at 4096, same run
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench"
    for i in ${TUNE6_REPEATS:-1 2}; do
        step "tune6-$i" sh -c "$KPROF bench tuned_matmul ${TUNE6_PARAMS:---param GROUP=8,16} --size M,N,K=4096 --max-time 2 --json > $LOGS/bench/tune6-$i.json"
    done
fi

if [[ "+$WHAT+" == *"+sk6+"* ]]; then  # issue 6: streamk_matmul checked, then against tuned_matmul and cuBLAS
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench" "$LOGS/sass"
    sass streamk_matmul
    step sk6-tests python3 -m pytest -q -ra --require-gpu -p no:cacheprovider -n 8 -k "streamk_matmul" tests/test_gpu.py tests/test_gpu_sanitize.py
    for i in ${SK6_REPEATS:-1 2 3}; do  # both kernels and cuBLAS in one run, repeated
        step "sk6-4096-$i" sh -c "$KPROF bench tuned_matmul streamk_matmul --size M,N,K=4096 --max-time 2 --json > $LOGS/bench/sk6-4096-$i.json"
    done
    for p in ${SK6_PARAMS:-SKMIN=2,16}; do  # against cuBLAS in the same run
        step "sk6-param-${p%%=*}" sh -c "$KPROF bench streamk_matmul --param $p --size M,N,K=4096 --max-time 2 --json > $LOGS/bench/sk6-param-${p%%=*}.json"
    done
    step sk6-2048-fill sh -c "$KPROF bench streamk_matmul --param SKFILL=90,100 --size M,N,K=2048 --max-time 2 --json > $LOGS/bench/sk6-2048-fill.json"
    step sk6-sizes sh -c "$KPROF bench tuned_matmul streamk_matmul --size M,N,K=1024,2048,8192 --max-time 2 --json > $LOGS/bench/sk6-sizes.json"
    step sk6-nonsquare sh -c "$KPROF bench tuned_matmul streamk_matmul --size M=8192 --size N=2048 --size K=4096 --max-time 2 --json > $LOGS/bench/sk6-nonsquare.json"
    step sk6-profile sh -c "$KPROF profile tuned_matmul streamk_matmul --size M=4096 N=4096 K=4096 --json > $LOGS/sk6-profile.json"
fi

if [[ "+$WHAT+" == *"+final6+"* ]]; then  # issue 6: the best kernel (FINAL6, streamk_matmul) verified, sanitized, timed across sizes, profiled; the ladder
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench" "$LOGS/sass"
    F6=${FINAL6:-streamk_matmul}
    sass "$F6"
    [[ "+$WHAT+" == *"+tests+"* ]] || step final6-tests python3 -m pytest -q -ra --require-gpu -p no:cacheprovider -n 8 -k "$F6" tests/test_gpu.py tests/test_gpu_sanitize.py
    step final6-sanitize $KPROF sanitize $F6
    step final6-ladder sh -c "$KPROF bench $MATMULS --size M,N,K=4096 --max-time 1 --json --plot $OUT/bench-matmul-ladder.png > $LOGS/bench/final6-ladder.json"
    step final6-sizes sh -c "$KPROF bench $F6 --size M,N,K=1024,2048,4096,8192 --max-time 2 --json --plot $OUT/bench-matmul-best.png > $LOGS/bench/final6-sizes.json"
    step final6-nonsquare sh -c "$KPROF bench $F6 --size M=8192 --size N=2048 --size K=4096 --max-time 2 --json > $LOGS/bench/final6-nonsquare.json"
    step final6-4096 sh -c "$KPROF bench tuned_matmul $F6 --size M,N,K=4096 --max-time 2 --json > $LOGS/bench/final6-4096.json"
    step final6-profile sh -c "$KPROF profile tuned_matmul $F6 --size M=4096 N=4096 K=4096 --json > $LOGS/final6-profile.json"
fi

if [[ "+$WHAT+" == *"+diag7+"* ]]; then  # issue 7: where linear_bias_relu's time goes (SASS, instruction counts)
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench" "$LOGS/sass"
    step diag7-verify python3 -m pytest -q -ra --require-gpu -p no:cacheprovider -k "linear_bias_relu" tests/test_gpu.py
    sass linear_bias_relu
    M=smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__cycles_active.avg,smsp__inst_executed_op_ldgsts.sum
    for b in ${DIAG7_PROFILE_B:-1 64}; do
        step "diag7-profile-B$b" sh -c "$KPROF profile linear_bias_relu --size B=$b K=4096 N=4096 --metrics $M --json > $LOGS/diag7-profile-B$b.json"
    done
    for s in ${DIAG7_SWEEPS:-KSPLIT=8 ROWS=64 MINB=1 STAGES=4}; do
        sweep diag7 linear_bias_relu "$s" --size B=${DIAG7_B:-1,16,32,64} --size K,N=${DIAG7_HIDDEN:-1024,4096} --max-time 0.3
    done
fi

if [[ "+$WHAT+" == *"+linear+"* ]]; then  # issue 7: the fused linear layer, verified, timed, profiled, sanitized
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench"
    step linear-verify python3 -m pytest -q -ra --require-gpu -p no:cacheprovider -k "linear_bias_relu" tests/test_gpu.py
    step linear-bench sh -c "$KPROF bench linear_bias_relu --size B=1,2,4,8,16,32,64 --size K,N=${LINEAR_HIDDEN:-1024,2048,4096} --max-time ${LINEAR_MAX_TIME:-0.5} --json --plot $OUT/bench-linear_bias_relu.png > $LOGS/bench/linear.json"
    for s in ${LINEAR_SWEEPS:-KSPLIT=4 STAGES=3 WROWS=2:STAGES=4}; do
        sweep linear-sweep linear_bias_relu "$s" --size B=1,8,16,32,64 --size K,N=4096 --max-time 0.5
    done
    step linear-profile sh -c "$KPROF profile linear_bias_relu linear_bias_relu_unfused --size B=1 K=4096 N=4096 --json > $LOGS/profile-linear-b1.json"
    step linear-profile-64 sh -c "$KPROF profile linear_bias_relu linear_bias_relu_unfused --size B=64 K=4096 N=4096 --json > $LOGS/profile-linear-b64.json"
    if [[ "+$WHAT+" == *"+profile7+"* ]]; then  # the other kernels of issue 7
        step profile-fused sh -c "$KPROF profile rmsnorm_onepass rmsnorm_unfused softmax_online softmax --size R=32768 C=8192 --json > $LOGS/profile-fused-rows.json"
        step profile-bandwidth sh -c "$KPROF profile vector_add_vec4 reduce_sum_vec4 --size N=268435456 --json > $LOGS/profile-bandwidth.json"
    fi
    for b in ${LINEAR_SANITIZE_B:-3 13 30}; do  # each thread layout of the kernel (the spec's sanitize size covers 33 to 64 rows)
        step "linear-sanitize-B$b" $KPROF sanitize linear_bias_relu --size B=$b
    done
fi

if [[ "+$WHAT+" == *"+evidence5+"* ]]; then  # issue 5: stability, compare, overhead, CUPTI's hardware trace
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench"
    for i in 1 2 3; do
        step "bench-stability-$i" sh -c "$KPROF bench naive_matmul tiled_matmul regblock_matmul softmax --baseline none --max-time 1 --json > $LOGS/bench/stability-$i.json"
    done
    step compare $KPROF compare last~1 last
    step launch-overhead python3 scripts/launch_overhead.py
    step cupti-hw-trace sh -c "KPROF_CUPTI_HW_TRACE=1 $KPROF bench vector_add --max-time 1 --json > $LOGS/bench/cupti-hw-trace-vector_add.json"
fi

if [ "$WHAT" = all ] || [[ "+$WHAT+" == *"+fused+"* ]]; then  # issue 7: bandwidth kernels and fused ops
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench"
    step peak-fused $KPROF peak
    B="$KPROF bench --max-time ${FUSED_MAX_TIME:-2} --json"
    step fused-vector_add sh -c "$B vector_add vector_add_vec4 --size N=2**20,2**24,2**26,2**28 --plot $OUT/bench-vector_add-sizes.png > $LOGS/bench/fused-vector_add.json"
    step fused-reduce_sum sh -c "$B reduce_sum reduce_sum_vec4 --size N=2**20,2**24,2**26,2**28 --plot $OUT/bench-reduce_sum-sizes.png > $LOGS/bench/fused-reduce_sum.json"
    # rmsnorm_onepass and softmax_online carry their unfused / multi-pass baselines in their specs.
    step fused-rmsnorm sh -c "$B rmsnorm rmsnorm_onepass rmsnorm_bf16 --size R=32768 --size C=8192 > $LOGS/bench/fused-rmsnorm.json"
    step fused-softmax sh -c "$B softmax softmax_online --size R=32768 --size C=8192 > $LOGS/bench/fused-softmax.json"
    step fused-linear sh -c "$KPROF bench linear_bias_relu --size B=1,2,4,8,16,32,64 --size K,N=1024,4096 --max-time 1 --json --plot $OUT/bench-linear_bias_relu.png > $LOGS/bench/fused-linear.json"
fi

if [ "$WHAT" = all ] || [[ "+$WHAT+" == *"+accuracy+"* ]]; then  # issue 5: kprof's median against ncu's
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench" "$LOGS/ncu"
    for k in naive_matmul tiled_matmul regblock_matmul softmax rmsnorm vector_add reduce_sum; do
        step "accuracy-$k" sh -c "$KPROF bench $k --max-time 2 --json > $LOGS/bench/accuracy-$k.json"
        step "accuracy-events-$k" sh -c "$KPROF bench $k --max-time 2 --timer events --json > $LOGS/bench/accuracy-events-$k.json"
        step "ncu-time-$k" sh -c "python3 scripts/ncu_time.py $k --repeat 10 > $LOGS/ncu/$k.json"
    done
    for n in 65536 1048576; do  # kernels under 10 us: hot mode (graph replay) against ncu's warm-cache time
        step "bench-hot-$n" sh -c "$KPROF bench vector_add --size N=$n --hot --max-time 2 --json > $LOGS/bench/hot-$n.json"
        step "bench-hot-events-$n" sh -c "$KPROF bench vector_add --size N=$n --hot --timer events --max-time 2 --json > $LOGS/bench/hot-events-$n.json"
        step "bench-warm-$n" sh -c "$KPROF bench vector_add --size N=$n --warm --max-time 2 --json > $LOGS/bench/warm-$n.json"
        step "ncu-time-small-none-$n" sh -c "python3 scripts/ncu_time.py vector_add N=$n --repeat 50 --cache-control none > $LOGS/ncu/vector_add-$n-none.json"
        step "ncu-time-small-all-$n" sh -c "python3 scripts/ncu_time.py vector_add N=$n --repeat 50 > $LOGS/ncu/vector_add-$n-all.json"
    done
fi

if [ "$WHAT" = all ] || [[ "+$WHAT+" == *"+measure+"* ]]; then
    mkdir -p "$LOGS/run"
    for name in vector_add reduce_sum naive_matmul tiled_matmul regblock_matmul rmsnorm softmax; do
        step "run-$name" $KPROF run "$name" --json
        cp "$LOGS/run-$name.txt" "$LOGS/run/$name.json"
    done
    step sanitize-tiled_matmul $KPROF sanitize tiled_matmul
    step sanitize-tiled_matmul_no_bounds $KPROF sanitize tiled_matmul_no_bounds --tool memcheck --sarif "$LOGS/tiled_matmul_no_bounds.sarif"
    step sanitize-neighbour_overflow-padding0 $KPROF sanitize neighbour_overflow --tool memcheck --memcheck-padding 0
    step sanitize-neighbour_overflow $KPROF sanitize neighbour_overflow --tool memcheck
    step sanitize-bad_shfl_mask $KPROF sanitize bad_shfl_mask
    step profile-ladder $KPROF profile naive_matmul tiled_matmul regblock_matmul --size M=2048 N=2048 K=2048 --plot "$OUT/roofline.png"
    for k in naive_matmul tiled_matmul regblock_matmul; do
        step "plain-ncu-$k" python3 scripts/plain_ncu.py $k M=2048 N=2048 K=2048
    done
    step profile-perf-cases $KPROF profile transpose_bank_conflicts transpose_bank_conflicts_fixed copy_uncoalesced copy_uncoalesced_fixed register_spill register_spill_fixed too_few_blocks too_few_blocks_fixed
    for k in naive_matmul tiled_matmul regblock_matmul vector_add reduce_sum rmsnorm softmax; do
        step "occupancy-$k" $KPROF occupancy $k
    done
    step cases $KPROF cases
fi

if [ "$WHAT" = all ] || [[ "+$WHAT+" == *"+bench+"* ]]; then
    export KPROF_HISTORY=$LOGS/history.sqlite
    mkdir -p "$LOGS/bench"
    step peak $KPROF peak --refresh
    step bench-matmul sh -c "$KPROF bench naive_matmul tiled_matmul regblock_matmul --size M,N,K=1024,2048,4096 --max-time 3 --plot $OUT/bench-matmul.png --json > $LOGS/bench/matmul.json"
    step bench-vector_add-block sh -c "$KPROF bench vector_add --param BLOCK=32,64,128,256,512,1024 --max-time 3 --plot $OUT/bench-vector_add-block.png --json > $LOGS/bench/vector_add-block.json"
    for i in 1 2 3; do
        step "bench-stability-$i" sh -c "$KPROF bench naive_matmul tiled_matmul softmax --max-time 3 --json > $LOGS/bench/stability-$i.json"
    done
    step compare $KPROF compare last~1 last
    step bench-hot-small sh -c "$KPROF bench vector_add --size N=65536 --hot --max-time 3 --json > $LOGS/bench/hot-small.json"
    step bench-warm-small sh -c "$KPROF bench vector_add --size N=65536 --warm --max-time 3 --json > $LOGS/bench/warm-small.json"
    for k in naive_matmul tiled_matmul softmax; do
        step "ncu-time-$k" python3 scripts/plain_ncu.py $k
    done
    step ncu-time-vector_add-small-cold python3 scripts/plain_ncu.py vector_add N=65536
    PLAIN_NCU_ARGS="--cache-control none" step ncu-time-vector_add-small-warm python3 scripts/plain_ncu.py vector_add N=65536
    step launch-overhead python3 scripts/launch_overhead.py
    python3 scripts/bench_evidence.py "$LOGS" > "$OUT/bench.md" 2>"$LOGS/bench-evidence-errors.txt" || status=1
fi

if [ "${KPROF_RECORD:-0}" = 1 ]; then
    step record python3 scripts/record_tool_output.py "$LOGS/record"
fi

GPU_CHECK_WHAT=$WHAT python3 scripts/gpu_summary.py "$LOGS" >"$OUT/summary.md" 2>"$LOGS/summary-errors.txt" || status=1
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs
cat "$OUT/summary.md"
exit $status
