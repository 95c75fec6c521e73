#!/usr/bin/env bash
# What every change needs checked and measured on a real GPU, in one command.
#
#   KPROF_COMMIT=$(git rev-parse --short HEAD) OUT=DIR bash scripts/gpu-check.sh [SECTIONS]
#
# SECTIONS is one or several of these joined by '+' (default: tests):
#   tests    kprof doctor, kprof build --all, the whole suite with pytest --require-gpu (a skipped GPU
#            test is a failure here), under pytest-xdist when it is installed
#   verify   only tests/child/test_gpu_kernels.py: every kernel verified at every checked size (no sanitizers)
#   recheck  the GPU tests matching RECHECK (a pytest -k expression)
#   measure  kprof peak; kprof run of every kernel at its default size; the matmul ladder against
#            cuBLAS and the fused kernels against their unfused baselines (kprof bench, same run);
#            the ladder's kernels against PyTorch's ops, eager and torch.compile (frameworks);
#            kprof sanitize tiled_matmul; kprof cases; kprof profile of the matmul ladder; on request (table),
#            the comparison table against PyTorch TABLE_RUNS times
#   tolerances  scripts/tolerances.py measure: every shipped spec's frontier at every checked size
#            (docs/spec.md); kprof run and the values detector on the softmax that flushes small values.
#            TOLERANCES_ONLY="SPEC ..." measures only those, keeping the rest from TOLERANCES_MERGE (a
#            JSON file of an earlier measurement); TOLERANCES_APPLY=1 then writes the tolerances into
#            the specs of this tree, so a later section (tests) checks them
#   op       kprof.load: every kernel from PyTorch and CuPy (tests/test_gpu_op.py), and the host time a
#            call adds over a bare cuLaunchKernel (scripts/op_overhead.py)
#   record   real compute-sanitizer and ncu output for the parser tests (scripts/record_tool_output.py)
#   spread   pytest-xdist with --kprof-sanitize on every GPU of the host: each worker's GPU
#            (examples/test_gpu_spread.py), and the example suite's wall time on one worker and on one per GPU
#   benches  every line of the file BENCHES ("NAME ARG...": kprof bench ARG..., its JSON kept as NAME.json;
#            scripts/benches/ has the lists, named for what each measures: scripts/benches/README.md)
#   speed    time to a verdict beside the plain run: examples/test_kernel_suite.py plain and under
#            pytest --kprof-sanitize (all four tools; SPEED_PER_TEST=1 adds the per-test mode), a
#            program under kprof sanitize -- (tools side by side; SPEED_SERIAL=1 adds --jobs 1 for it and
#            the suite) and the four tools by hand,
#            kprof peak on an empty cache (and --thorough), kprof cases
#   mutants  kprof mutants over every kernel spec of kprof list (MUTANTS="NAME ..." for some): each spec's
#            score and survivors as mutants-NAME.json (MUTANT_JOBS mutants at once, default 8)
#   likeforlike  kprof peak --refresh (PyTorch's ops beside kprof's kernels), the attention lines of
#            scripts/benches/like-for-like.txt, the cheat corpus, the attention kernels' GPU tests and
#            sanitizers, the file's other lines (LFL_STEPS picks some of: peak attention corpus checks rest)
#   perfdata the performance corpus (perf_cases/, PERF_CASES for some): each case and its twin verified
#            (kprof run) and timed in one kprof bench; Nsight Compute's full set on both, kept as reports and
#            read back as raw metrics, rules (--page details) and source counters (--page source, SASS and
#            CUDA), and the same for the kernels of PERF_KERNELS; each cubin's SASS with line information (nvdisasm); then kprof profile's diagnosis (tries
#            included) on each case, and kprof cases --perf (PERF_DIAGNOSE=0 leaves them out)
#   perfcases  kprof cases --perf (the diagnosis on the performance corpus, each case benched beside its twin,
#            tries included; PERF_CASES for some), then kprof profile's text diagnosis of PERF_SHOW (default tail_wave)
#   sourcepages  Nsight Compute's per-line counters: kprof cases --perf (SP_CASES, default the whole corpus; - none) with
#            each case's full-set report kept, then kprof profile --set full --no-try of SP_PROFILE (more specs:
#            twins, kprof's kernels); each report's source page as CSV (--print-source sass, cuda, cuda,sass), its
#            details and raw pages, and (SP_PROBE, a few) what ncu_report reads per instruction
#            (scripts/probes/ncu_source_counters.py); imports SP_JOBS (8) at once, each with its own TMPDIR
#   public   the public ladder nobody here wrote (perf_public/llmc.yaml: llm.c's dev/cuda kernels, each version against
#            the next): specs from the checkout PUBLIC_CHECKOUT (default .corpus/llm.c, carried; its files checked
#            against the expectations' hashes), then scripts/public_corpus.py score (PUBLIC_STEPS for some), JSON kept
#   nan      kprof sanitize --tool nan over examples/nan_cases.py's seeded cases (NAN_CASES for some) and the clean
#            one, each beside its plain run, and over examples/transformer_step.py (the watcher's cost on a step)
#   nocounters  kprof cases --perf (NC_CASES for some) and kprof profile of NC_SHOW (default copy_uncoalesced) with
#            KPROF_NCU an ncu that refuses counters (ERR_NVGPUCTRPERM, exit 1): the causes that need no counters
#   interrupts  scripts/interrupts.py: kprof bench, sanitize (a kernel and a program), profile and cases stopped by
#            Ctrl-C (the process group), SIGTERM (kprof alone) and SIGKILL, and eight kprof processes on one cache
#            and history at once: exit codes, processes and temporary files left, the history and cache after
#   transformer  kprof profile -- python3 examples/transformer_step.py TRANSFORMER_ARGS (default --layers 2
#            --seq 512), eager and --compile (JSON: every profiled launch and the ranking); each plain run first
#   inline   a finding inside a CUDA header (examples/syncwarp_mask.cu's __syncwarp): synccheck's XML and text
#            with the default backtrace and with device frames, the cubin's SASS with inline line information;
#            with CS_NEW=PATH (a newer compute-sanitizer, e.g. the nvidia-cuda-sanitizer-api wheel's), its
#            version and the same records under it, and (CS_NEW_CASES=1) kprof cases under it
#   newchecks  issue 54's newest checks: the corpus cases only a newer compute-sanitizer checks (NEW_CASES),
#            each and its twin run (kprof run), then recorded raw under this machine's compute-sanitizer and
#            CS_NEW (scripts/record_tool_output.py --cases); the probes of scripts/probes/ (PROBES=0 leaves them
#            out) and kprof's own 1-D tensor map; kprof cases over the whole corpus under both; kprof sanitize of
#            the tensor-core kernels (TC_KERNELS; " " for none) under both
#   ranks    examples/two_ranks.py (torchrun, two ranks, gloo) plain and under kprof sanitize, seeded and fixed;
#            the fixed one under kprof profile (JSON and text: each kernel's rank; and with --launch-count 2);
#            the fixed one with its sum through NCCL (--nccl), plain and under kprof sanitize; where an mpiexec is
#            found (pip's mpich, carried in .whl/), the same job launched by it: plain, sanitized (seeded and fixed)
#            and profiled
#   gemminit  examples/gemm_initcheck.py under initcheck (this machine's compute-sanitizer and CS_NEW): a half
#            cuBLAS GEMM into torch.empty and into a zeroed buffer, read by .float(); the kernels' names
#   userfirst  examples/test_user_suite.py plain, under pytest --kprof-sanitize, and with --kprof-all-kernels
#            (USERFIRST_ALL=0 leaves that one out)
#   racelib  racecheck on a half-precision nn.Linear (examples/gemm_initcheck.py --out linear) and on the user
#            suite's test_linear_half, with every kernel checked and with kprof's library filters, under this
#            machine's compute-sanitizer and CS_NEW: where its "Internal Sanitizer Error" comes from; and
#            initcheck's cost per saved record with host frames only (--print-limit 5 against 1000)
#   racehost  racecheck on the user suite's racy CuPy test with a program's default backtrace and with host
#            frames only, 1,000 records kept (XML saved), under this machine's compute-sanitizer and CS_NEW
#   integrity  the cheat corpus of kprof bench (kprof cases --bench) and the ladder's kernels against their
#            baselines with --strict, the checks' cost per point (scripts/integrity_cost.py, integrity-cost.md)
#   record-programs  only the first part of programs: the example programs under compute-sanitizer by hand
#            (XML and text for tests/data/programs) and the values detector on a program
#   programs the example programs (examples/) under compute-sanitizer by hand and under kprof sanitize -- (the
#            values detector on a program too; a C++ program built with -g),
#            their XML and text kept for the parser tests; kprof profile -- CMD; the example test file under
#            pytest --kprof-sanitize against the tools run by hand over each test, with both wall times
#
# Two at once, one per GPU: give each its own CUDA_VISIBLE_DEVICES, OUT, KPROF_CACHE_DIR and KPROF_SITE.
#
# CUDA_LINE=12 runs it all on the CUDA 12 line (cuda-bindings 12, NVRTC 12, compute-sanitizer 12 from the
# wheels in .whl12/; docs/gpu.md) on a machine whose own toolkit and bindings are CUDA 13's.
# PEAK_SEED=FILE seeds the ceilings cache with an earlier kprof peak of the same GPU and driver.
#
# DRY_RUN=1 writes every step's command to steps.txt and runs none of them (tests/test_gpu_check.py).
# DEADLINE_S=N stops a step still running N seconds after the start with SIGTERM (a kprof bench then
# writes the points it finished into its JSON, marked interrupted). Every pytest step (tests, verify,
# recheck, op) names its 30 slowest tests and, with pytest-timeout, fails a test still running after
# TEST_TIMEOUT_S (300) seconds; PYTEST_ARGS adds more options.
#
# It installs what the machine lacks from wheels carried in .whl/ (docs/gpu.md), and writes
# summary.md (date, GPU, driver, commit, every command with its exit code and wall time, the pytest
# totals) and the raw logs and JSON under $OUT (default ./gpu-out). BUDGET_S=N skips any step that
# would start after N seconds. docs/results/README.md indexes what is published from these folders.
set -u
WHAT=${1:-tests}
OUT=${OUT:-$PWD/gpu-out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
cd "$(dirname "$0")/.."
ROOT=$PWD
export PYTHONUNBUFFERED=1
export KPROF_CACHE_DIR=${KPROF_CACHE_DIR:-/tmp/kprof-cache}
export KPROF_HISTORY=$LOGS/history.sqlite

SITE=${KPROF_SITE:-/tmp/site}  # where the wheels go: one per gpu-check running at the same time
WHEELS=$(ls .whl/*.whl 2>/dev/null)
if [ "${CUDA_LINE:-}" = 12 ]; then
    # The CUDA 12 line on a machine whose own is 13, as the [cuda12] extra gives it: the wheels of
    # .whl12/ (cuda-bindings 12, NVRTC 12 with the runtime and CCCL headers of its release, the CUDA 12
    # compute-sanitizer) first on PYTHONPATH, NVRTC as the compiler (the machine's nvcc is CUDA 13's),
    # and no cupti-python (the extra has none: kprof bench times with CUDA events).
    WHEELS="$(ls .whl/*.whl | grep -v cupti_python) $(ls .whl12/*.whl)"
    export KPROF_COMPILER=nvrtc
    export KPROF_COMPUTE_SANITIZER=${KPROF_COMPUTE_SANITIZER:-$SITE/nvidia/cuda_sanitizer_api/bin/compute-sanitizer}
fi
if [ -n "$WHEELS" ]; then
    # shellcheck disable=SC2086
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" $WHEELS >"$LOGS/pip.txt" 2>&1 || { echo "wheel install failed"; cat "$LOGS/pip.txt"; }
    export PYTHONPATH=$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}
    # a wheel's programs (ninja, which torch builds its extensions with) land in $SITE/bin
    [ -d "$SITE/bin" ] && export PATH=$SITE/bin:$PATH
    # the CUDA 12 sanitizer wheel ships compute-sanitizer without the executable bit
    [ -f "$SITE/nvidia/cuda_sanitizer_api/bin/compute-sanitizer" ] && chmod +x "$SITE"/nvidia/cuda_sanitizer_api/bin/*
else
    export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
fi
# PEAK_SEED=FILE: this GPU's ceilings as kprof peak measured them before (same GPU and driver), put
# where the suite looks for them, so its first timing test does not measure them again
if [ -n "${PEAK_SEED:-}" ]; then
    target=$(python3 -c "from kprof import telemetry; from kprof.build import build; from kprof.measure import bench; print(bench.peak_cache_path(telemetry.snapshot(), build.cache_dir()))")
    mkdir -p "$(dirname "$target")" && { [ -f "$target" ] || cp "$PEAK_SEED" "$target"; }
fi
# cupti-python loads libcupti: if it cannot find it, point the loader at the toolkit's copy.
if ! python3 -c "from cupti import cupti; cupti.get_timestamp()" >"$LOGS/cupti.txt" 2>&1; then
    lib=$(find /usr/local/cuda*/ /opt/nvidia -name 'libcupti.so*' 2>/dev/null | head -1)
    [ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
KPROF="python3 -m kprof"
XDIST=""
python3 -c "import xdist" 2>/dev/null && XDIST="-n ${JOBS:-8} --dist loadgroup"
# every pytest step: the slowest tests named, and (with pytest-timeout) no test that hangs past 300 s
PYTEST_ARGS="--durations=30 ${PYTEST_ARGS:-}"
python3 -c "import pytest_timeout" 2>/dev/null && PYTEST_ARGS="--timeout=${TEST_TIMEOUT_S:-300} $PYTEST_ARGS"
status=0
T_START=$(date +%s)
BUDGET_S=${BUDGET_S:-100000}

step() {  # step NAME CMD...: run, log to $LOGS/NAME.txt, record exit code and wall time in steps.txt
    local name=$1; shift
    local t0 ms rc
    if [ $(( $(date +%s) - T_START )) -ge "$BUDGET_S" ]; then
        printf '%s skipped: the %ss budget was spent: %s\n' "$name" "$BUDGET_S" "$*" | tee -a "$LOGS/steps.txt"
        status=1
        return 1
    fi
    if [ "${DRY_RUN:-0}" = 1 ]; then  # the commands a run would make, in order, none of them run
        printf '%s dry-run: %s\n' "$name" "$*" | tee -a "$LOGS/steps.txt"
        return 0
    fi
    t0=$(date +%s%N)
    if [ -n "${DEADLINE_S:-}" ]; then  # stopped with SIGTERM at the deadline: kprof then prints what it measured
        local left=$(( DEADLINE_S - ($(date +%s) - T_START) ))
        [ "$left" -lt 1 ] && left=1
        timeout -s TERM -k 15 "$left" "$@" >"$LOGS/$name.txt" 2>&1
    else
        "$@" >"$LOGS/$name.txt" 2>&1
    fi
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '%s rc=%s %d.%03ds: %s\n' "$name" "$rc" $((ms / 1000)) $((ms % 1000)) "$*" | tee -a "$LOGS/steps.txt"
    [ $rc -eq 0 ] || status=1
    return $rc
}
json() {  # json NAME CMD...: a kprof command whose --json output is kept as $LOGS/NAME.json
    local name=$1; shift
    step "$name" sh -c "exec $* --json > $LOGS/$name.json"  # exec: a SIGTERM at the deadline reaches kprof
}
has() { [[ "+$WHAT+" == *"+$1+"* ]]; }
bench_list() {  # bench_list FILE [PREFIX] [NAMES]: each line "NAME ARG..." of FILE (scripts/benches/README.md),
    # kprof bench ARG... --json kept as PREFIXNAME.json; NAMES, a space-separated list, picks lines
    local file=$1 prefix=${2:-} only=${3:-} name args
    while read -r -u 3 name args; do
        [ -z "$name" ] || [[ "$name" == \#* ]] && continue
        [ -n "$only" ] && [[ " $only " != *" $name "* ]] && continue
        json "$prefix$name" $KPROF bench $args
    done 3< "$file"
}

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    # the GPUs this run may use: CUDA_VISIBLE_DEVICES's indices or UUIDs, every GPU without it
    nvidia-smi ${CUDA_VISIBLE_DEVICES:+-i "$CUDA_VISIBLE_DEVICES"} --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    echo "${KPROF_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}${KPROF_DIRTY:+ (uncommitted changes: $KPROF_DIRTY)}"
    python3 --version
} >"$LOGS/env.txt" 2>&1
{  # the CUDA line this run is on: the bindings, the compiler kprof picks, the sanitizer
    python3 -c "import cuda.bindings; print('cuda-bindings', cuda.bindings.__version__)"
    python3 -c "from kprof.build import build; c = build.compiler_for(build.detect_arch()); print('compiler', c.version, c.program[0])"
    "${KPROF_COMPUTE_SANITIZER:-compute-sanitizer}" --version | tail -1
    echo "CUDA_LINE=${CUDA_LINE:-machine}"
} >"$LOGS/toolchain.txt" 2>&1

# First, so that the tests and measurements below check the tolerances it applies.
if has tolerances; then
    step tolerances python3 scripts/tolerances.py measure "$LOGS/tolerances.json" --jobs 6 \
        ${TOLERANCES_ONLY:+--only $TOLERANCES_ONLY} ${TOLERANCES_MERGE:+--merge "$TOLERANCES_MERGE"}
    if [ "${TOLERANCES_APPLY:-0}" = 1 ]; then
        step tolerances-apply python3 scripts/tolerances.py propose "$LOGS/tolerances.json" --apply
    fi
    step run-softmax_flush sh -c "! $KPROF run softmax_flush"
    step values-softmax_flush sh -c "! $KPROF sanitize --tool values softmax_flush"
    step run-softmax_flush_fixed $KPROF run softmax_flush_fixed
fi
if has tests; then
    step doctor $KPROF doctor
    step build $KPROF build --all
    # the ceilings once, on an idle GPU, before the suite: every timing test then finds them cached
    step peak $KPROF peak
    # what bounds the suite: the CPUs' busy share (vmstat) and the GPU's (nvidia-smi), once a second
    if [ "${DRY_RUN:-0}" != 1 ]; then
        vmstat -n 1 > "$LOGS/suite-cpu.txt" 2>&1 & CPU_SAMPLER=$!
        nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 1 \
            > "$LOGS/suite-gpu.txt" 2>&1 & GPU_SAMPLER=$!
    fi
    step pytest python3 -m pytest -v -ra --require-gpu -p no:cacheprovider $XDIST ${PYTEST_ARGS:-} tests
    [ "${DRY_RUN:-0}" != 1 ] && kill "$CPU_SAMPLER" "$GPU_SAMPLER" 2>/dev/null
fi
if has verify; then
    step verify python3 -m pytest -q -ra --require-gpu -p no:cacheprovider $XDIST ${PYTEST_ARGS:-} tests/child/test_gpu_kernels.py
fi
if has recheck; then
    step recheck python3 -m pytest -v -ra --require-gpu -p no:cacheprovider $XDIST ${PYTEST_ARGS:-} -k "${RECHECK:?set RECHECK}" tests
fi
if has measure; then
    # MEASURE_STEPS picks some of: peak run sanitize cases bench-ladder bench-fused frameworks table
    # profile-frameworks profile (default all but table and profile-frameworks)
    MS=" ${MEASURE_STEPS:-peak run sanitize cases bench-ladder bench-fused frameworks profile} "
    on() { [[ "$MS" == *" $1 "* ]]; }
    MATMULS=$(awk '$1 == "bench-matmul-ladder" {for (i = 2; i <= NF && $i !~ /^--/; i++) printf "%s ", $i}' scripts/benches/ladder.txt)
    on peak && json peak $KPROF peak --refresh
    on peak && step peak-text $KPROF peak
    if on run; then
        mkdir -p "$LOGS/run"
        for k in $($KPROF list --json | python3 -c "import json,sys; print(' '.join(r['name'] for r in json.load(sys.stdin) if r['group'] == 'kernel'))"); do
            json "run/$k" $KPROF run "$k"
        done
    fi
    # the checks first, then the measurements that take longest
    on sanitize && step sanitize-tiled_matmul $KPROF sanitize tiled_matmul
    on cases && step cases $KPROF cases --jobs "${JOBS:-8}"
    L=scripts/benches
    on bench-ladder && bench_list "$L/ladder.txt" "" "bench-matmul-ladder"
    on bench-fused && bench_list "$L/ladder.txt" "" "bench-fused"
    on frameworks && bench_list "$L/frameworks.txt"  # each kernel against PyTorch's op, eager and compiled (docs/bench.md)
    if on table; then  # the comparison table of docs/bench.md, TABLE_RUNS times (default 3): both sides of each row in one kprof bench
        # TABLE_ROWS picks rows (default all), TABLE_FIRST numbers the first run (default 1: runs 1 to TABLE_RUNS)
        mkdir -p "$LOGS/table"
        first=${TABLE_FIRST:-1}
        for r in $(seq "$first" $(( first + ${TABLE_RUNS:-3} - 1 ))); do
            bench_list "$L/table.txt" "table/$r-" "${TABLE_ROWS:-}"
        done
    fi
    if on profile-frameworks; then  # ncu on the fused kernels and on what the framework launches for them (docs/fused.md)
        json profile-frameworks-8192 $KPROF profile rmsnorm_onepass softmax_online rmsnorm_bf16 --baseline torch.compile
        json profile-frameworks-1024 $KPROF profile rmsnorm_onepass softmax_online --size R=4096 C=1024 \
            --param FIT=1 VEC=1 --baseline torch.compile
        # the float32 rows of 16,384, read twice at the default PER=8 (in 16-byte vectors since c26d281)
        json profile-frameworks-16384 $KPROF profile rmsnorm_onepass softmax_online --size R=4096 C=16384 --baseline torch.compile
        # the fused linear layer where cuBLAS is faster (batch 64, hidden 4096), beside cuBLASLt's epilogue
        json profile-frameworks-linear $KPROF profile linear_bias_relu --size B=64 K=4096 N=4096 --baseline cublaslt
        # the two matmul shapes below 0.90x cuBLAS (docs/matmul.md), beside torch.mm's cuBLAS kernel
        json profile-frameworks-matmul $KPROF profile streamk_matmul --size M=2048 N=8192 K=1024 --baseline torch
        json profile-frameworks-matmul-2048 $KPROF profile streamk_matmul --size M=2048 N=2048 K=2048 --baseline torch
    fi
    on profile && json profile-matmul-ladder $KPROF profile $MATMULS --size M=4096 N=4096 K=4096
fi
if has benches; then  # each line of the file BENCHES, "NAME ARG...": kprof bench ARG... --json, kept as NAME.json
    bench_list "${BENCHES:?set BENCHES to a file of kprof bench lines}"
fi
if has programs || has record-programs; then
    P=$LOGS/programs
    mkdir -p "$P"
    # Installed as a user installs it, so pytest finds kprof's plugin through its entry point.
    step install python3 -m pip install -q --no-deps --no-build-isolation --no-index -e .
    CS=$(python3 -c "from kprof import proc; print(proc.find_tool('compute-sanitizer'))")
    hand() {  # hand NAME TOOL ENV... -- CMD...: compute-sanitizer as a user runs it, XML and text kept
        local name=$1 tool=$2; shift 2
        local envs=()
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        shift
        step "hand-$name" env "${envs[@]}" "$CS" --tool "$tool" --xml --save "$P/$name.xml" --print-limit 100 \
            $( [ "$tool" = memcheck ] && echo --padding 256 ) $( [ "$tool" = racecheck ] && echo --racecheck-report all ) "$@"
        cp "$LOGS/hand-$name.txt" "$P/$name.txt"
    }
    hand triton_scale.pool memcheck X=1 -- python3 examples/triton_scale.py
    hand triton_scale.memcheck memcheck PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- python3 examples/triton_scale.py
    hand cuda_python_sum.racecheck racecheck X=1 -- python3 examples/cuda_python_sum.py
    hand cuda_python_sum.launches3 racecheck X=1 -- python3 examples/cuda_python_sum.py --launches 3
    hand cupy_shift.pool memcheck X=1 -- python3 examples/cupy_shift.py
    hand cupy_shift.memcheck memcheck KPROF_CUPY_NO_POOL=1 PYTHONPATH=$ROOT/kprof/hooks:$PYTHONPATH -- python3 examples/cupy_shift.py
    # issue 32's programs: each kernel's source a string, a generated kernel, a C++ program, a bad warp
    # mask, a freed device-heap write, a race in global memory (the four tools miss it; values does not)
    NOPOOL="KPROF_CUPY_NO_POOL=1 PYTHONPATH=$ROOT/kprof/hooks:${PYTHONPATH:-}"
    BARE=$(mktemp -d)  # the NVRTC program named bare block_sum.cu, run from a folder with no such file
    hand nvrtc_inline.racecheck racecheck X=1 -- python3 -c "import os, runpy, sys; os.chdir(sys.argv[1]); sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')" "$BARE" "$ROOT/examples/nvrtc_inline.py"
    hand cupy_elementwise.memcheck memcheck $NOPOOL -- python3 examples/cupy_elementwise.py
    hand cupy_syncwarp.synccheck synccheck $NOPOOL -- python3 examples/cupy_syncwarp.py
    hand cupy_syncwarp.memcheck memcheck $NOPOOL -- python3 examples/cupy_syncwarp.py
    hand cupy_heap.memcheck memcheck $NOPOOL -- python3 examples/cupy_heap.py
    hand cupy_counter.racecheck racecheck $NOPOOL -- python3 examples/cupy_counter.py
    step build-vecadd nvcc -g -lineinfo -o "$P/vecadd" examples/vecadd.cu
    hand vecadd.memcheck memcheck X=1 -- "$P/vecadd"
    step build-nvtx nvcc -g -lineinfo -o "$P/nvtx_readonly" examples/nvtx_readonly.cu
    hand nvtx_readonly.memcheck memcheck X=1 -- "$P/nvtx_readonly"
    # What a tool checked (launches seen, kernels with line information): compute-sanitizer's session
    # details say neither; kprof's launch tally, loaded in the program under each tool, counts them
    step session-details env $NOPOOL "$CS" --tool memcheck --print-session-details --print-level info \
        --xml --save "$P/session.memcheck.xml" --save-session-details python3 examples/cupy_counter.py
    cp "$LOGS/session-details.txt" "$P/session.memcheck.txt"
    # (under a tool the tally cannot start: tests/data/programs/tally.under-memcheck.jsonl; kprof counts in a
    # run of its own, kprof/launchcount.py: the tally's lines of a CuPy and of a Triton program, no tool)
    step tally-under-memcheck env $NOPOOL PYTHONPATH="$ROOT/kprof/hooks:$SITE:$ROOT" \
        KPROF_LAUNCH_TALLY="$P/tally.under-memcheck.jsonl" "$CS" --tool memcheck python3 examples/cupy_counter.py --fixed
    step tally-cupy env $NOPOOL PYTHONPATH="$ROOT/kprof/hooks:$SITE:$ROOT" KPROF_LAUNCH_TALLY="$P/tally.cupy.jsonl" \
        python3 examples/cupy_counter.py --fixed
    step tally-triton env PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONPATH="$ROOT/kprof/hooks:$SITE:$ROOT" \
        KPROF_LAUNCH_TALLY="$P/tally.triton.jsonl" python3 examples/triton_scale.py
    step sanitize-checked-counter $KPROF sanitize --json -- python3 examples/cupy_counter.py --fixed
    step sanitize-checked-nokernel $KPROF sanitize --tool memcheck --json -- python3 -c "import cupy; cupy.empty(4)"
    step sanitize-checked-vecadd $KPROF sanitize --tool memcheck --json -- "$P/vecadd"
    # the values detector on a program: the race the four tools miss, its atomic twin, a float sum
    step sanitize-values-counter $KPROF sanitize --tool values --json -- python3 examples/cupy_counter.py
    step sanitize-values-counter-fixed $KPROF sanitize --tool values --json -- python3 examples/cupy_counter.py --fixed
    step sanitize-values-float-sum $KPROF sanitize --tool values --json -- python3 examples/cupy_counter.py --float-sum
fi
if has programs; then
    step sanitize-counter $KPROF sanitize --json -- python3 examples/cupy_counter.py  # the four tools: clean
    step sanitize-no-kernel $KPROF sanitize --tool all --json -- python3 -c "print(1)"
    step sanitize-triton $KPROF sanitize -- python3 examples/triton_scale.py
    step sanitize-triton-fixed $KPROF sanitize -- python3 examples/triton_scale.py --fixed
    step sanitize-cuda-python $KPROF sanitize --tool racecheck -- python3 examples/cuda_python_sum.py
    step sanitize-cuda-python-launches3 $KPROF sanitize --tool racecheck -- python3 examples/cuda_python_sum.py --launches 3
    step sanitize-cuda-python-fixed $KPROF sanitize --tool racecheck -- python3 examples/cuda_python_sum.py --fixed
    step sanitize-cupy $KPROF sanitize --tool memcheck -- python3 examples/cupy_shift.py
    step sanitize-cupy-fixed $KPROF sanitize --tool memcheck -- python3 examples/cupy_shift.py --fixed
    step profile-triton $KPROF profile --kernel scale -- python3 examples/triton_scale.py --fixed
    # the examples are a user's suite: one pytest process (-n 0), not the project's own -n auto (pyproject.toml)
    step pytest-plain python3 -m pytest examples/test_gpu_ops.py -q -p no:cacheprovider -n 0
    PLUGIN=$(python3 -c "from importlib.metadata import entry_points as e; print('' if any(p.value == 'kprof.pytest_plugin' for p in e(group='pytest11')) else '-p kprof.pytest_plugin')")
    step pytest-kprof-sanitize python3 -m pytest examples/test_gpu_ops.py -q -p no:cacheprovider -n 0 $PLUGIN --kprof-sanitize=memcheck
    # The same by hand: memcheck over each test in its own process, pools off, as the plugin does it.
    step pytest-by-hand sh -c "for t in \$(python3 -m pytest examples/test_gpu_ops.py --collect-only -q -p no:cacheprovider | grep '::'); do PYTORCH_NO_CUDA_MEMORY_CACHING=1 $CS --tool memcheck --padding 256 --error-exitcode 99 python3 -m pytest -q -p no:cacheprovider -n 0 \$t > /dev/null 2>&1; echo \"\$t \$?\"; done"
    step pytest-programs python3 -m pytest -v -ra --require-gpu -p no:cacheprovider tests/tools/programs/test_gpu_programs.py
fi
if has spread; then
    step install-spread python3 -m pip install -q --no-deps --no-build-isolation --no-index -e .
    NGPU=$(nvidia-smi -L | wc -l)
    export KPROF_SPREAD_LOG=$LOGS/spread.txt
    step spread-workers python3 -m pytest examples/test_gpu_spread.py -q -p no:cacheprovider -n "$NGPU" --kprof-sanitize=memcheck
    unset KPROF_SPREAD_LOG
    step spread-suite-n python3 -m pytest examples/test_gpu_ops.py -q -p no:cacheprovider -n "$NGPU" --kprof-sanitize=memcheck
    step spread-suite-1 python3 -m pytest examples/test_gpu_ops.py -q -p no:cacheprovider -n 1 --kprof-sanitize=memcheck
fi
if has speed; then
    # Time to a verdict, each beside the plain run in the same run (docs/results/README.md).
    step install-speed python3 -m pip install -q --no-deps --no-build-isolation --no-index -e .
    CS=$(python3 -c "from kprof import proc; print(proc.find_tool('compute-sanitizer'))")
    PLUGIN=$(python3 -c "from importlib.metadata import entry_points as e; print('' if any(p.value == 'kprof.pytest_plugin' for p in e(group='pytest11')) else '-p kprof.pytest_plugin')")
    SUITE="python3 -m pytest examples/test_kernel_suite.py -p no:cacheprovider -n 0 -rA"  # a user's suite: one process
    step suite-warm $SUITE -q  # the first run compiles the Triton kernels into Triton's cache
    step suite-plain $SUITE -q
    step suite-kprof $SUITE $PLUGIN --kprof-sanitize
    [ -n "${SPEED_SERIAL:-}" ] && step suite-kprof-jobs1 $SUITE $PLUGIN --kprof-sanitize --kprof-jobs=1
    [ -n "${SPEED_PER_TEST:-}" ] && step suite-per-test $SUITE $PLUGIN --kprof-sanitize --kprof-per-test
    step prog-plain python3 examples/triton_scale.py
    step prog-kprof $KPROF sanitize -- python3 examples/triton_scale.py
    [ -n "${SPEED_SERIAL:-}" ] && step prog-kprof-jobs1 $KPROF sanitize --jobs 1 -- python3 examples/triton_scale.py
    step prog-by-hand sh -c "for t in memcheck racecheck initcheck synccheck; do PYTORCH_NO_CUDA_MEMORY_CACHING=1 $CS --tool \$t --error-exitcode 99 python3 examples/triton_scale.py > /dev/null 2>&1; echo \"\$t \$?\"; done"
    # kprof peak cold: a cache with no cubins and no ceilings; then the thorough sweep, same run.
    step peak-cold env KPROF_CACHE_DIR=$OUT/cold-cache $KPROF peak --refresh
    step peak-thorough env KPROF_CACHE_DIR=$OUT/cold-cache $KPROF peak --refresh --thorough
    cp $OUT/cold-cache/peak-*.json "$LOGS/peak-thorough.json" 2>/dev/null; rm -rf "$OUT/cold-cache"
    step cases $KPROF cases
fi
if has inline; then  # issue 54: the user's line for inlined intrinsics, and the newest compute-sanitizer
    IN=$LOGS/inline
    mkdir -p "$IN"
    CS=$(python3 -c "from kprof import proc; print(proc.find_tool('compute-sanitizer'))")
    step build-syncwarp nvcc -g -lineinfo -arch=sm_90 -o "$IN/syncwarp_mask" examples/syncwarp_mask.cu
    step build-syncwarp-fixed nvcc -g -lineinfo -arch=sm_90 -DFIXED -o "$IN/syncwarp_mask_fixed" examples/syncwarp_mask.cu
    step cubin-syncwarp nvcc -lineinfo -arch=sm_90 -cubin -o "$IN/syncwarp_mask.cubin" examples/syncwarp_mask.cu
    step sass-syncwarp sh -c "nvdisasm --print-line-info-inline $IN/syncwarp_mask.cubin > $IN/syncwarp_mask.sass.txt 2>&1"
    for cs in "$CS" ${CS_NEW:-}; do
        v=$([ "$cs" = "$CS" ] && echo machine || echo new)
        step "cs-version-$v" "$cs" --version
        for bt in no device; do
            step "syncwarp-$v-$bt" "$cs" --tool synccheck --xml --save "$IN/syncwarp.$v.$bt.xml" --show-backtrace "$bt" \
                --error-exitcode 99 "$IN/syncwarp_mask"
            [ -f "$LOGS/syncwarp-$v-$bt.txt" ] && cp "$LOGS/syncwarp-$v-$bt.txt" "$IN/syncwarp.$v.$bt.txt"
        done
        step "syncwarp-fixed-$v" "$cs" --tool synccheck --error-exitcode 99 "$IN/syncwarp_mask_fixed"
    done
    if [ -n "${CS_NEW:-}" ]; then
        step cs-new-help "$CS_NEW" --help
        [ "${CS_NEW_CASES:-0}" = 1 ] && json cases-cs-new env KPROF_COMPUTE_SANITIZER="$CS_NEW" $KPROF cases
    fi
fi
if has newchecks; then  # issue 54: what only a newer compute-sanitizer checks, and the corpus matrix under both
    NC=$LOGS/newchecks
    mkdir -p "$NC"
    new_cases=${NEW_CASES:-missing_proxy_fence mbarrier_double_init tma_box_overflow}
    for c in $new_cases; do
        step "run-$c" $KPROF run "$c"
        step "run-${c}_fixed" $KPROF run "${c}_fixed"
    done
    step record-cases-machine python3 scripts/record_tool_output.py "$NC/machine" --cases $new_cases
    [ -n "${CS_NEW:-}" ] && step record-cases-new python3 scripts/record_tool_output.py "$NC/new" --cases $new_cases --exe "$CS_NEW"
    # probes: which shapes of a missing proxy fence racecheck reports; which 1-D tensor maps the driver encodes
    CS_PROBE=$(python3 -c "from kprof import proc; print(proc.find_tool('compute-sanitizer'))" 2>/dev/null)
    for v in $([ "${PROBES:-1}" = 1 ] && echo 1 2 3 4); do  # PROBES=0 leaves them out
        for f in 0 1; do
            step "build-proxy-$v-$f" nvcc -arch=sm_90 -lineinfo -DVARIANT=$v -DFENCED=$f -o "$NC/proxy_${v}_${f}" scripts/probes/proxy_fence.cu
            step "proxy-$v-$f-plain" "$NC/proxy_${v}_${f}"
            for cs in "$CS_PROBE" ${CS_NEW:-}; do
                vv=$([ "$cs" = "$CS_PROBE" ] && echo machine || echo new)
                step "proxy-$v-$f-$vv" "$cs" --tool racecheck --racecheck-report all --error-exitcode 99 "$NC/proxy_${v}_${f}"
            done
        done
    done
    [ "${PROBES:-1}" = 1 ] && step tensormap-rank1 python3 scripts/probes/tensormap_rank1.py
    step run-tma-rank1 $KPROF run tests/data/kernels/tma_rank1.yaml  # kprof's own 1-D tensor map, end to end
    json cases-machine $KPROF cases
    [ -n "${CS_NEW:-}" ] && json cases-new env KPROF_COMPUTE_SANITIZER="$CS_NEW" $KPROF cases
    for k in ${TC_KERNELS:-mma_matmul wgmma_matmul wgmma_attention wgmma_attention_causal flash_attention async_matmul}; do
        step "sanitize-$k-machine" $KPROF sanitize "$k"
        [ -n "${CS_NEW:-}" ] && step "sanitize-$k-new" env KPROF_COMPUTE_SANITIZER="$CS_NEW" $KPROF sanitize "$k"
    done
fi
if has integrity; then
    step install-integrity python3 -m pip install -q --no-deps --no-build-isolation --no-index -e .
    json integrity-corpus $KPROF cases --bench
    json integrity-ladder $KPROF bench vector_add_vec4 reduce_sum_vec4 rmsnorm_onepass softmax_online tiled_matmul --baseline auto --strict --no-history
    json integrity-torch $KPROF bench rmsnorm_onepass softmax_online --baseline torch,torch.compile --strict --no-history
    python3 scripts/integrity_cost.py "$LOGS/integrity-ladder.json" "$LOGS/integrity-torch.json" > "$LOGS/integrity-cost.md" 2>&1
fi
if has perfdata; then  # the performance corpus: the data the diagnosis is built and tested on (docs/profile.md)
    PD=$LOGS/perf
    mkdir -p "$PD"
    cases=${PERF_CASES:-$(ls perf_cases/*.yaml | xargs -n1 basename | sed 's/\.yaml$//')}
    for c in $cases; do
        json "bench-$c" $KPROF bench "$c" "${c}_fixed" --max-time "${PERF_BENCH_S:-1}"
        set_name=full  # every rule; a spec with many launches gets the quick set (full replays each launch ~40 times)
        [ "$(grep -c 'entry:' "perf_cases/$c.yaml")" -gt 2 ] && set_name=quick
        step "ncu-$c" sh -c "exec $KPROF profile $c ${c}_fixed --set $set_name --save-report $PD --json > $PD/$c.profile.json"
    done
    # kernels of kprof's own beside the corpus (PERF_KERNELS, e.g. wgmma_attention): reports and pages the same way
    for k in ${PERF_KERNELS:-}; do
        step "ncu-$k" sh -c "exec $KPROF profile $k --set full --save-report $PD --json > $PD/$k.profile.json"
    done
    sources=$(ls "$ROOT"/perf_cases/*.cu "$ROOT"/kernels/*.cu | paste -sd, -)
    for c in $cases ${PERF_KERNELS:-}; do
        for n in "$c" "${c}_fixed"; do  # the twin's rules too: what ncu promises on a kernel with nothing to fix
            [ -f "$PD/$n.ncu-rep" ] || continue
            step "pages-$n" sh -c "ncu --import $PD/$n.ncu-rep --csv --page details > $PD/$n.details.csv 2>&1;
                ncu --import $PD/$n.ncu-rep --csv --page source --print-source cuda,sass \
                --resolve-source-file $sources > $PD/$n.cudasass.csv 2>&1"
        done
    done
    for f in "$KPROF_CACHE_DIR"/*.cubin; do  # SASS with line information, for the line map's tests
        case $(basename "$f") in kprof_*) continue ;; esac
        nvdisasm --print-line-info "$f" > "$PD/$(basename "$f" .cubin).sass.txt" 2>&1
    done
    if [ "${PERF_DIAGNOSE:-1}" = 1 ]; then
        for c in $cases; do
            json "diagnose-$c" $KPROF profile "$c"
        done
        json cases-perf $KPROF cases --perf ${PERF_CASES:-}
    fi
fi
if has perfcases; then
    json cases-perf $KPROF cases --perf ${PERF_CASES:-}
    for k in ${PERF_SHOW:-tail_wave}; do
        step "diagnose-$k" $KPROF profile "$k"
    done
fi
if has sourcepages; then  # the data the per-line attribution is built on (docs/profile.md), and a corpus score
    SP=$LOGS/sourcepages
    mkdir -p "$SP"
    # shellcheck disable=SC2086
    [ "${SP_CASES:-}" != "-" ] && json cases-perf-sp $KPROF cases --perf --save-report "$SP" ${SP_CASES:-}
    # shellcheck disable=SC2086
    [ -n "${SP_PROFILE:-}" ] && json profile-sp $KPROF profile ${SP_PROFILE} --set full --no-try --save-report "$SP"
    sources=$(ls "$ROOT"/perf_cases/*.cu "$ROOT"/kernels/*.cu | paste -sd, -)
    pages() {  # pages REPORT: its pages beside it, with a TMPDIR of its own (ncu locks in TMPDIR)
        local r=$1 b=${1%.ncu-rep} t
        t=$(mktemp -d)
        for how in sass cuda cuda,sass; do
            TMPDIR=$t ncu --import "$r" --csv --page source --print-source "$how" --resolve-source-file "$sources" \
                > "$b.source-${how/,/-}.csv" 2>&1
        done
        TMPDIR=$t ncu --import "$r" --csv --page details > "$b.details.csv" 2>&1
        TMPDIR=$t ncu --import "$r" --csv --page raw --print-units base > "$b.raw.csv" 2>&1
        rm -rf "$t"
    }
    export -f pages
    export sources
    step pages-sp bash -c "ls $SP/*.ncu-rep | xargs -P ${SP_JOBS:-8} -I{} bash -c 'pages {}'"
    for n in ${SP_PROBE:-}; do
        step "probe-$n" python3 scripts/probes/ncu_source_counters.py "$SP/$n.ncu-rep" "$SP/$n.ncu_report.json"
    done
fi
if has public; then  # kprof's diagnosis scored on code it was never tuned on (docs/profile.md)
    step public-specs python3 scripts/public_corpus.py specs "${PUBLIC_CHECKOUT:-.corpus/llm.c}" "$LOGS/public-specs"
    # shellcheck disable=SC2086
    step public-score python3 scripts/public_corpus.py score "$LOGS/public-specs" ${PUBLIC_STEPS:-} \
        --json "$LOGS/public-score.json"  # the steps before --json: argparse takes no positionals after it
fi
if has nocounters; then  # the diagnosis where ncu may not read counters (ERR_NVGPUCTRPERM): what it still says
    NC=$LOGS/nocounters
    mkdir -p "$NC"
    printf '#!/bin/sh\necho "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0."\nexit 1\n' > "$NC/ncu"
    chmod +x "$NC/ncu"
    # shellcheck disable=SC2086
    json nocounters-cases env KPROF_NCU="$NC/ncu" $KPROF cases --perf ${NC_CASES:-}
    for k in ${NC_SHOW:-copy_uncoalesced}; do
        step "nocounters-$k" env KPROF_NCU="$NC/ncu" $KPROF profile "$k"
    done
fi
if has nan; then  # issue 77: the first non-finite output of a program, at its line (kprof sanitize --tool nan)
    for c in ${NAN_CASES:-log_zero norm bf16_exp triton_other clean}; do
        step "nan-plain-$c" python3 examples/nan_cases.py --case "$c"
        step "nan-$c" sh -c "exec $KPROF sanitize --tool nan --json -- python3 examples/nan_cases.py --case $c > $LOGS/nan-$c.json"
    done
    # its cost on a training step: the plain run beside the watched one (the clean step reports nothing)
    step nan-transformer-plain python3 examples/transformer_step.py ${TRANSFORMER_ARGS:---layers 2 --seq 512}
    # shellcheck disable=SC2086
    step nan-transformer sh -c "exec $KPROF sanitize --tool nan --json -- python3 examples/transformer_step.py \
        ${TRANSFORMER_ARGS:---layers 2 --seq 512} > $LOGS/nan-transformer.json"
fi
if has interrupts; then  # issue 69: what a signal or a concurrent kprof leaves behind, on the GPU
    step interrupts python3 scripts/interrupts.py "$LOGS/interrupts" --kprof "$KPROF"
fi
if has transformer; then  # where a real PyTorch program spends a training step, eager and compiled
    TA=${TRANSFORMER_ARGS:---layers 2 --seq 512}
    # shellcheck disable=SC2086
    for how in eager compile; do
        flag=$([ $how = compile ] && echo --compile)
        step "transformer-plain-$how" python3 examples/transformer_step.py $TA $flag
        # --json before --: after it, the word is the program's
        step "profile-transformer-$how" sh -c "exec $KPROF profile --json --range step --launch-count \
            ${TRANSFORMER_LAUNCHES:-1000} -- python3 examples/transformer_step.py $TA $flag > $LOGS/profile-transformer-$how.json"
    done
fi
if has userfirst; then  # the user's kernels first: a suite like a project's own (examples/test_user_suite.py:
    # Triton, cuBLAS and cuDNN through torch, CuPy; three seeded bugs) plain, under --kprof-sanitize (racecheck
    # and synccheck off library kernels) and with --kprof-all-kernels; warm caches for all (a first plain run)
    US="python3 -m pytest examples/test_user_suite.py -p no:cacheprovider -n 0 -rA"
    PLUGIN=$(python3 -c "from importlib.metadata import entry_points as e; print('' if any(p.value == 'kprof.pytest_plugin' for p in e(group='pytest11')) else '-p kprof.pytest_plugin')")
    step user-suite-warm $US
    step user-suite-plain $US
    step user-suite-kprof $US $PLUGIN --kprof-sanitize
    [ "${USERFIRST_ALL:-1}" = 1 ] && step user-suite-kprof-all-kernels $US $PLUGIN --kprof-sanitize --kprof-all-kernels
    step user-suite-plain-again $US
fi
if has racelib; then  # racecheck's "Internal Sanitizer Error" in a half nn.Linear: the filters', the kernel's or the tool's?
    CS=$(python3 -c "from kprof import proc; print(proc.find_tool('compute-sanitizer'))")
    mapfile -t EXA < <(python3 -c "from kprof.tools.sanitizers import kernelpolicy as k; print('\n'.join(k.exclude_args()))")
    LH="python3 -m pytest examples/test_user_suite.py -k linear_half -p no:cacheprovider -n 0 -q"
    for cs in "$CS" ${CS_NEW:-}; do
        v=$([ "$cs" = "$CS" ] && echo machine || echo new)
        RC="--tool racecheck --print-limit 20 --error-exitcode 99 --target-processes all"
        for dt in float16 float32; do
            step "racelib-$v-$dt-all" "$cs" $RC python3 examples/gemm_initcheck.py --out linear --dtype $dt
            step "racelib-$v-$dt-filtered" "$cs" $RC "${EXA[@]}" python3 examples/gemm_initcheck.py --out linear --dtype $dt
        done
        step "racelib-$v-float16-filtered-nobt" "$cs" $RC --show-backtrace no "${EXA[@]}" python3 examples/gemm_initcheck.py --out linear
        step "racelib-$v-float16-nvjet-only" "$cs" $RC --kernel-name-exclude "regex=^nvjet_" python3 examples/gemm_initcheck.py --out linear
        step "racelib-$v-float16-at-only" "$cs" $RC --kernel-name-exclude "regex=^_ZN2at" python3 examples/gemm_initcheck.py --out linear
        step "racelib-$v-suite-filtered" "$cs" $RC "${EXA[@]}" --xml --save "$LOGS/racelib-$v-suite-filtered.xml" $LH
        step "racelib-$v-suite-all" "$cs" $RC $LH
    done
    GI="--tool initcheck --error-exitcode 99 --show-backtrace host"
    for limit in 5 1000; do  # what a saved record costs with host frames only (the .float() of a half GEMM: 257)
        step "initlimit-$limit" "$CS" $GI --print-limit $limit --xml --save "$LOGS/initlimit-$limit.xml" \
            python3 -m pytest examples/test_user_suite.py -k linear_half -p no:cacheprovider -n 0 -q
    done
fi
if has racehost; then  # what racecheck's device frames cost a suite's child, and whether its records join without them
    CS=$(python3 -c "from kprof import proc; print(proc.find_tool('compute-sanitizer'))")
    for cs in "$CS" ${CS_NEW:-}; do
        v=$([ "$cs" = "$CS" ] && echo machine || echo new)
        for bt in yes host; do
            step "racehost-$v-$bt" "$cs" --tool racecheck --racecheck-report all --print-limit 1000 --error-exitcode 99 \
                --show-backtrace $bt --xml --save "$LOGS/racehost-$v-$bt.xml" \
                python3 -m pytest examples/test_user_suite.py -k block_sum -p no:cacheprovider -n 0 -q
        done
    done
fi
if has ranks; then  # a two-rank torch.distributed job (gloo, one GPU) plain and under kprof sanitize, rank by rank
    TR="python3 -m torch.distributed.run --standalone --nproc_per_node 2 examples/two_ranks.py"
    step ranks-plain $TR
    step ranks-plain-fixed $TR --fixed
    # --json before --: after it, the word is the program's
    step ranks-sanitize sh -c "exec $KPROF sanitize --json -- $TR > $LOGS/ranks-sanitize.json"
    step ranks-sanitize-fixed sh -c "exec $KPROF sanitize --json -- $TR --fixed > $LOGS/ranks-sanitize-fixed.json"
    # kprof profile of the same job: ncu follows both ranks; each profiled kernel carries its rank
    step ranks-profile sh -c "exec $KPROF profile --json -- $TR --fixed > $LOGS/ranks-profile.json"
    step ranks-profile-text $KPROF profile -- $TR --fixed
    # fewer launches than the job makes: does ncu count them over all ranks, and does the job end when it is done?
    step ranks-profile-count sh -c "exec $KPROF profile --json --launch-count 2 -- $TR --fixed > $LOGS/ranks-profile-count.json"
    # the sum through NCCL (its kernels, under the tools too); on a machine of one GPU both ranks share it, which
    # NCCL may refuse: what it says is kept
    step ranks-nccl-plain $TR --fixed --nccl
    step ranks-nccl-sanitize sh -c "exec $KPROF sanitize --json -- $TR --fixed --nccl > $LOGS/ranks-nccl-sanitize.json"
    # the job as an MPI user launches it: each rank found by its PMI_RANK (MPICH) rather than torchrun's RANK
    if MPIEXEC=$(command -v mpiexec); then
        MR="$MPIEXEC -n 2 python3 examples/two_ranks.py"
        step mpi-plain $MR --fixed
        step mpi-sanitize sh -c "exec $KPROF sanitize --json -- $MR > $LOGS/mpi-sanitize.json"
        step mpi-sanitize-fixed sh -c "exec $KPROF sanitize --json -- $MR --fixed > $LOGS/mpi-sanitize-fixed.json"
        step mpi-profile sh -c "exec $KPROF profile --json -- $MR --fixed > $LOGS/mpi-profile.json"
    else
        echo "mpi-*: skipped (no mpiexec: carry pip's mpich wheel in .whl/)" >> "$LOGS/steps.txt"
    fi
fi
if has gemminit; then  # does initcheck see a half-precision cuBLAS GEMM's writes? (examples/gemm_initcheck.py)
    CS=$(python3 -c "from kprof import proc; print(proc.find_tool('compute-sanitizer'))")
    for dt in float16 float32; do
        step "gemminit-names-$dt" python3 examples/gemm_initcheck.py --names --dtype $dt
    done
    GI="--tool initcheck --print-limit 5 --error-exitcode 99"
    for bt in host device yes; do  # what each kind of backtrace costs on the same records
        step "gemminit-machine-float16-empty-backtrace-$bt" "$CS" $GI --show-backtrace $bt python3 examples/gemm_initcheck.py
    done
    for cs in "$CS" ${CS_NEW:-}; do
        v=$([ "$cs" = "$CS" ] && echo machine || echo new)
        step "gemminit-$v-version" "$cs" --version
        for run in "float16 empty" "float16 zeros" "float32 empty" "bfloat16 empty"; do
            read -r dt out <<<"$run"
            step "gemminit-$v-$dt-$out" "$cs" $GI --show-backtrace no python3 examples/gemm_initcheck.py --dtype "$dt" --out "$out"
        done
    done
    step gemminit-kprof sh -c "exec $KPROF sanitize --json --tool initcheck -- python3 examples/gemm_initcheck.py \
        --out linear > $LOGS/gemminit-kprof.json"
fi
if has likeforlike; then  # like-for-like numbers (docs/bench.md): the attention kernels (bfloat16 O) against
    # each SDPA backend, the cheat corpus, their GPU tests and sanitizers, the ceilings with PyTorch's ops, then
    # every other shipped spec's baselines with each timed call's kernels and flags. LFL_STEPS picks some of
    # "peak attention corpus checks rest" (default all, in that order)
    LS=" ${LFL_STEPS:-peak attention corpus checks rest} "
    lon() { [[ "$LS" == *" $1 "* ]]; }
    LFL=scripts/benches/like-for-like.txt
    step install-likeforlike python3 -m pip install -q --no-deps --no-build-isolation --no-index -e .
    lon peak && json lfl-peak $KPROF peak --refresh  # first: every bench below is judged against these
    lon peak && step lfl-peak-text $KPROF peak
    lon attention && bench_list "$LFL" "" "lfl-attn-wgmma lfl-attn-wgmma-causal lfl-attn-flash lfl-attn-flash-causal"
    lon corpus && json lfl-corpus $KPROF cases --bench
    lon checks && step lfl-verify-attention python3 -m pytest -q -ra --require-gpu -p no:cacheprovider $XDIST \
        -k attention tests/child/test_gpu_kernels.py
    for k in wgmma_attention wgmma_attention_causal flash_attention; do
        lon checks && step "lfl-sanitize-$k" $KPROF sanitize "$k"
    done
    lon rest && bench_list "$LFL" "" "lfl-elementwise lfl-reduce lfl-rows lfl-matmul lfl-matmul-tensor lfl-linear"
fi
if has mutants; then
    # How strong each spec's verdict is (issue 34): every mutant of each kernel, its score and survivors.
    step install-mutants python3 -m pip install -q --no-deps --no-build-isolation --no-index -e .
    for name in ${MUTANTS:-$($KPROF list --json | python3 -c "import json, sys; print(' '.join(d['name'] for d in json.load(sys.stdin) if d['group'] == 'kernel'))")}; do
        json "mutants-$name" $KPROF mutants "$name" --jobs "${MUTANT_JOBS:-8}"
    done
fi
if has op; then
    step op-tests python3 -m pytest -v -ra --require-gpu -p no:cacheprovider $XDIST ${PYTEST_ARGS:-} tests/test_gpu_op.py
    step op-overhead python3 scripts/op_overhead.py "$LOGS/op-overhead.json"
fi
if has record; then
    step record python3 scripts/record_tool_output.py "$LOGS/record"
fi

GPU_CHECK_WHAT=$WHAT python3 scripts/gpu_summary.py "$LOGS" >"$OUT/summary.md" 2>"$LOGS/summary-errors.txt" || status=1
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs 2>/dev/null
echo "summary: $OUT/summary.md (status $status)"
exit $status
