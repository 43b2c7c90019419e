#!/usr/bin/env bash
# The GPU check kit (Note [GPU check kit] in xtask/src/gpu_kit.rs), written by `cargo xtask
# gpu-kit`. On a Linux x86-64 machine with an NVIDIA driver, and no Rust toolchain:
#
#   ./run.sh           the CUDA suite on the real driver, then `bench --device cuda` (the C1
#                      and W2-W6 device rows, with PyTorch's CUDA as the reference when
#                      `python3 -c "import torch"` works), then one summary
#   ./run.sh --quick   the suite without the two MNIST trainings and only the C1 row, on the
#                      emulated device unless TORCH_CUDA_DRIVER says otherwise (what CI runs)
#
# The exit status is 0 when every test passed and the bench ran.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
quick=0
for arg in "$@"; do
    case "${arg}" in
        --quick) quick=1 ;;
        -h | --help)
            sed -n '2,10p' "${BASH_SOURCE[0]}"
            exit 0
            ;;
        *)
            echo "run.sh: unknown argument ${arg} (expected --quick)" >&2
            exit 2
            ;;
    esac
done

if [ "${quick}" = 1 ]; then
    export TORCH_CUDA_DRIVER="${TORCH_CUDA_DRIVER:-emulator}"
else
    export TORCH_CUDA_DRIVER="${TORCH_CUDA_DRIVER:-cuda}"
fi
export TORCH_TEST_DATA="${here}/data" XTASK_ROOT="${here}"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

echo "== GPU check kit: $(sed -n 2,3p "${here}/MANIFEST" | tr '\n' ' ')"
echo "== driver: ${TORCH_CUDA_DRIVER}; $(uname -m), $(nproc) CPUs"
if command -v nvidia-smi > /dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/== GPU: /'
fi

unpack() {
    if command -v xz > /dev/null 2>&1; then
        xz -dc "$1" > "$2"
    else
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
    fi && chmod +x "$2"
}
for packed in "${here}"/bin/*.xz; do
    name="$(basename "${packed}" .xz)"
    if ! unpack "${packed}" "${work}/${name}"; then
        echo "run.sh: could not unpack ${packed} (needs xz or python3)" >&2
        exit 1
    fi
done

summary=()
failed=0
# step NAME COMMAND...: runs the command with its output in the log (and on the terminal),
# then adds NAME's result, its test counts and its seconds to the summary.
step() {
    local name="$1"
    shift
    echo
    echo "== ${name}: $*"
    local start rc counts
    start=$(date +%s)
    "$@" 2>&1 | tee "${work}/${name}.log"
    rc=${PIPESTATUS[0]}
    counts="$(grep -h '^test result:' "${work}/${name}.log" | sed -E 's/^test result: [A-Za-z]+\. //; s/; [0-9]+ measured.*//' | paste -sd '+' -)"
    if [ "${rc}" = 0 ]; then
        summary+=("$(printf '%-12s passed  %4ss  %s' "${name}" "$(($(date +%s) - start))" "${counts}")")
    else
        failed=1
        summary+=("$(printf '%-12s FAILED  %4ss  %s (exit %s)' "${name}" "$(($(date +%s) - start))" "${counts}" "${rc}")")
    fi
}

skip=()
if [ "${quick}" = 1 ]; then
    # The two 50-step MNIST trainings take minutes on the emulated device; CI's CUDA step runs them.
    skip=(--skip the_mnist_cnn_trains_on_the_device_as_on_the_cpu --skip the_mnist_cnn_trains_with_amp_on_the_device)
fi
for t in kernels runtime device_ops cuda; do
    step "${t}" "${work}/${t}" "${skip[@]}"
done

if [ "${quick}" = 1 ]; then
    step bench "${work}/xtask" bench =C1.add1 --device cuda --threads 1 --time 0.3 --rounds 1 --this-build
else
    # Every device row (C1, W2-W6), one thread (the host side of a GPU workload is one thread).
    step bench "${work}/xtask" bench --device cuda --threads 1 --time 1 --this-build
fi

echo
echo "== summary (driver ${TORCH_CUDA_DRIVER})"
printf '%s\n' "${summary[@]}"
if [ "${failed}" = 0 ]; then
    echo "== all steps passed"
else
    echo "== some steps FAILED (logs above)"
fi
exit "${failed}"
