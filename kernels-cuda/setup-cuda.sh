#!/usr/bin/env bash
# Installs the CUDA toolchain the `cuda` feature builds with: nvcc and the CUDA headers from
# NVIDIA's pip wheels, pinned (the target driver is CUDA 13.0, which cannot JIT newer PTX), into
# <workspace>/.cuda/venv, where kernels-cuda/build.rs looks for them. Needs python3 with venv;
# no GPU and no system CUDA install. Idempotent.
#
#   kernels-cuda/setup-cuda.sh && cargo test --workspace --features kernels-cuda/cuda
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=.cuda/venv
if [ ! -x "${venv}/bin/pip" ]; then
    python3 -m venv "${venv}"
fi
"${venv}/bin/pip" install --quiet --disable-pip-version-check \
    nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
cu=$(echo "${venv}"/lib/python3*/site-packages/nvidia/cu13)
test -f "${cu}/include/cuda_fp16.h" && test -x "${cu}/bin/nvcc"
echo "CUDA headers and nvcc in ${cu}"
