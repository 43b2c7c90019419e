#!/usr/bin/env bash
# Builds and runs the CUDA emulator's self-test with g++ (no cargo), and checks that the kernels still build
# for the GPU with nvcc.
#
#   emu/selftest/run.sh           # everything; exits non-zero on any failure
#   emu/selftest/run.sh --bench   # also print the benchmark timings
#
# Environment: CUDA_ROOT (the pip wheels' nvidia/cu13 directory, which has include/ and bin/nvcc), CXX,
# OUT (build directory, default: a fresh temporary directory, removed when everything passed).
#
# Runs: the suite under CUDA_EMU_SCHED=fwd, rev, rand:1, rand:7 with 1 and 2 workers; once built with
# -DCUDA_EMU_UCONTEXT (and 32 KiB stacks); once built with -fsanitize=address,undefined. Then every file of
# kernels/ through the emulator's compiler flags, and every file of kernels/ plus selftest.cu through
# nvcc -cubin for sm_90 with -Xptxas -v (build errors and register spills fail; warnings fail for selftest.cu).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EMU=$(dirname "$HERE")
KERNELS=$(cd "$EMU/../kernels" && pwd)
# The pip wheels kernels-cuda/setup-cuda.sh installs into <workspace>/.cuda/venv, as build.rs.
if [[ -z "${CUDA_ROOT:-}" ]]; then
    for cand in "$EMU"/../../.cuda/venv/lib/python3*/site-packages/nvidia/cu13; do
        if [[ -f "$cand/include/cuda_fp16.h" ]]; then CUDA_ROOT=$(cd "$cand" && pwd); fi
    done
fi
if [[ -z "${CUDA_ROOT:-}" ]]; then
    echo "no CUDA headers: run kernels-cuda/setup-cuda.sh, or set CUDA_ROOT to the directory holding include/cuda_fp16.h" >&2
    exit 2
fi
CXX=${CXX:-g++}
OWN_OUT=0
if [[ -z "${OUT:-}" ]]; then
    OUT=$(mktemp -d "${TMPDIR:-/tmp}/cuda_emu_selftest.XXXXXX")
    OWN_OUT=1  # removed at the end if everything passed
fi
BENCH=0
if [[ "${1:-}" == "--bench" ]]; then BENCH=1; fi
mkdir -p "$OUT"

if [[ ! -f "$CUDA_ROOT/include/cuda_fp16.h" ]]; then
    echo "run.sh: no CUDA headers under CUDA_ROOT=$CUDA_ROOT" >&2
    exit 2
fi

# -isystem: warnings in the toolkit's headers are not ours to fix; everything else must be warning-free.
COMMON=(-std=c++17 -Wall -Wextra -Werror -pthread -isystem "$CUDA_ROOT/include" -isystem "$CUDA_ROOT/include/cccl"
        -I"$EMU" -I"$KERNELS")
# As build.rs compiles them: `#pragma unroll` is a CUDA hint g++ does not know.
KERNEL_FLAGS=(-ftls-model=initial-exec -Wno-unknown-pragmas -x c++ -include cuda_cpu.h)

failures=0
fail() {
    echo "FAILED: $*"
    failures=$((failures + 1))
}

# The wrapper build.rs will generate per .cu file: the kernel file plus one CUDA_EMU_EXPORT per kernel.
kernel_names() {
    grep -oE 'extern "C" __global__ void( __launch_bounds__\([^)]*\))? [A-Za-z_][A-Za-z0-9_]*\(' "$1" |
        sed -E 's/.* ([A-Za-z_][A-Za-z0-9_]*)\($/\1/'
}
{
    echo "#include \"$HERE/selftest.cu\""
    kernel_names "$HERE/selftest.cu" | sed 's/.*/CUDA_EMU_EXPORT(&)/'
} > "$OUT/selftest_emu.cu"

# build VARIANT FLAGS...: the runtime, the kernels and the driver into $OUT/VARIANT/selftest.
build() {
    local variant=$1
    shift
    local dir="$OUT/$variant"
    mkdir -p "$dir"
    "$CXX" "${COMMON[@]}" "$@" -c "$EMU/cuda_cpu_rt.cpp" -o "$dir/rt.o" &
    "$CXX" "${COMMON[@]}" "$@" "${KERNEL_FLAGS[@]}" -c "$OUT/selftest_emu.cu" -o "$dir/kernels.o" &
    "$CXX" "${COMMON[@]}" "$@" -c "$HERE/main.cpp" -o "$dir/main.o" &
    local ok=1
    for job in $(jobs -p); do wait "$job" || ok=0; done
    if [[ $ok != 1 ]]; then return 1; fi
    "$CXX" "${COMMON[@]}" "$@" "$dir/main.o" "$dir/kernels.o" "$dir/rt.o" -o "$dir/selftest"
}

passed_total=0
runs=0
# run VARIANT SCHED WORKERS
run() {
    local variant=$1 sched=$2 workers=$3 log
    log=$(CUDA_EMU_SCHED=$sched CUDA_EMU_WORKERS=$workers "$OUT/$variant/selftest" 2>&1) || {
        echo "$log" | tail -n 30
        fail "$variant selftest under sched=$sched workers=$workers"
        return
    }
    echo "  $variant: ${log##*$'\n'}"
    local passed
    passed=$(sed -nE 's/.*: ([0-9]+) checks passed.*/\1/p' <<< "$log" | tail -n 1)
    passed_total=$((passed_total + passed))
    runs=$((runs + 1))
}

echo "== building (g++ -O2, -O2 -DCUDA_EMU_UCONTEXT, -O1 -fsanitize=address,undefined) in $OUT"
if build opt -O2 -g; then
    for sched in fwd rev rand:1 rand:7; do
        for workers in 1 2; do run opt "$sched" "$workers"; done
    done
else
    fail "build (-O2)"
fi
if build ucontext -O2 -g -DCUDA_EMU_UCONTEXT; then
    CUDA_EMU_STACK_KB=32 run ucontext rand:7 2
else
    fail "build (-DCUDA_EMU_UCONTEXT)"
fi
if build asan -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all; then
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} run asan rand:1 2
else
    fail "build (-fsanitize=address,undefined)"
fi

# The per-file compiles below are independent: they run as parallel jobs (at most one per core),
# each into its own log, and are reported in file order once all have finished.
JOBS=$(nproc 2>/dev/null || echo 2)
# spawn LOG CMD...: runs CMD in the background with its output in LOG and its status in LOG.rc.
spawn() {
    local log=$1
    shift
    while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
    ( "$@" >"$log" 2>&1; echo $? >"$log.rc" ) &
}

echo "== kernels/ through the emulator's compiler flags"
shopt -s nullglob
gxx_files=()
for f in "$KERNELS"/*; do
    case "$f" in
        *.cu) src=$f ;;
        *.cuh) src="$OUT/$(basename "$f").cu"; echo "#include \"$f\"" > "$src" ;;
        *) continue ;;
    esac
    gxx_files+=("$f")
    spawn "$OUT/$(basename "$f").gxx.log" "$CXX" "${COMMON[@]}" -O2 "${KERNEL_FLAGS[@]}" -c "$src" -o "$OUT/$(basename "$f").o"
done

NVCC="$CUDA_ROOT/bin/nvcc"
nvcc_files=()
if [[ -x "$NVCC" ]]; then
    for f in "$KERNELS"/* "$HERE/selftest.cu"; do
        case "$f" in
            *.cu) src=$f ;;
            *.cuh) src="$OUT/$(basename "$f").cu" ;;  # written above
            *) continue ;;
        esac
        werror=()
        if [[ "$f" == "$HERE/selftest.cu" ]]; then werror=(--Werror all-warnings); fi
        nvcc_files+=("$f")
        spawn "$OUT/$(basename "$f").nvcc.log" "$NVCC" -cubin -arch=sm_90 -std=c++17 -O3 -I"$KERNELS" -Xptxas -v \
            "${werror[@]}" "$src" -o "$OUT/$(basename "$f").cubin"
    done
fi
wait

for f in "${gxx_files[@]}"; do
    log="$OUT/$(basename "$f").gxx.log"
    if [[ "$(cat "$log.rc")" == 0 ]]; then
        echo "  ok: $(basename "$f")"
    else
        cat "$log"
        fail "g++ $(basename "$f")"
    fi
done

if [[ -x "$NVCC" ]]; then
    echo "== nvcc -cubin -arch=sm_90 -Xptxas -v (a failed build or a register spill fails the run; warnings fail"
    echo "   it for selftest.cu, and are shown for kernels/)"
    for f in "${nvcc_files[@]}"; do
        log=$(cat "$OUT/$(basename "$f").nvcc.log")
        if [[ "$(cat "$OUT/$(basename "$f").nvcc.log.rc")" != 0 ]]; then
            echo "$log"
            fail "nvcc $(basename "$f")"
            continue
        fi
        kernels=$(grep -c "Compiling entry function" <<< "$log" || true)
        warnings=$(grep -cE "warning #|warning ?:" <<< "$log" || true)
        spills=$(grep -E "[1-9][0-9]* bytes spill (stores|loads)" <<< "$log" || true)
        if [[ -n "$spills" ]]; then
            echo "$spills"
            fail "register spills in $(basename "$f")"
        else
            echo "  ok: $(basename "$f") ($kernels kernels, no spills, $warnings warning(s))"
            if [[ $warnings != 0 ]]; then
                grep -A3 -E "warning #|warning ?:" <<< "$log" | head -n 20 | sed 's/^/     /'
            fi
        fi
    done
else
    echo "== nvcc not found at $NVCC: GPU build not checked"
fi

if [[ $BENCH == 1 && -x "$OUT/opt/selftest" ]]; then
    echo "== benchmarks (-O2)"
    "$OUT/opt/selftest" --bench || fail "benchmarks"
fi

echo "== summary: $runs suite runs, $passed_total checks passed in total, $failures failure(s)"
if [[ $failures != 0 ]]; then
    echo "build directory kept: $OUT"
    exit 1
fi
if [[ $OWN_OUT == 1 ]]; then rm -rf "$OUT"; fi
