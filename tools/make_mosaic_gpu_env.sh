#!/usr/bin/env bash
# Build .envs/mosaic-gpu-0.12.0.1: the environment in which Mosaic GPU compiles on a CPU
# (notebook 09, jaxperf.compilers.mosaic_gpu). JAX's CUDA plugin holds Mosaic GPU's passes
# (to LLVM/NVVM, PTX, cubin); with XLA's deviceless topology it compiles for sm_90a without a
# GPU. It lives apart from .venv because, installed there, the plugin would make JAX try to
# start CUDA in every process. The plugin's CUDA libraries (cuDNN, cuBLAS, ...) are not
# installed: nothing runs, and the compile needs none of them. ptxas and libdevice come from
# nvidia-cuda-nvcc (the worker puts them first), and nvdisasm (nvidia-cuda-nvdisasm)
# turns Mosaic GPU's cubin into the SASS it dumps. About 1.3 GB. Needs PyPI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
env="$root/.envs/mosaic-gpu-0.12.0.1"
plugin="jax==0.12.0.1 jaxlib==0.12.0.1 jax-cuda13-plugin==0.12.0.1 jax-cuda13-pjrt==0.12.0.1"
deps="numpy==2.5.5 ml_dtypes==0.6.0 opt_einsum==3.4.0 scipy==1.18.1 nvidia-cuda-nvcc==13.5.37 nvidia-cuda-nvdisasm==13.5.37"
spec="$plugin $deps"
[ -f "$env/.complete" ] && [ "$(cat "$env/.complete")" = "$spec" ] && exit 0
py=""
pyenv_root="$(pyenv root 2>/dev/null || true)"
for cand in "${PYTHON:-}" python3.12 ${pyenv_root:+"$pyenv_root"/versions/3.12*/bin/python3}; do
  [ -n "$cand" ] && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { py="$cand"; break; }
done
[ -n "$py" ] || { echo "make_mosaic_gpu_env: no python3.12 found" >&2; exit 1; }
rm -rf "$env"
# Step lines, so a caller (./run_all.sh prints them as the build goes) can tell where it is.
echo "make_mosaic_gpu_env: 1/3 a Python 3.12 venv in .envs/$(basename "$env")"
"$py" -m venv "$env"
echo "make_mosaic_gpu_env: 2/3 the CUDA plugin, no CUDA runtime ($plugin; about 1 GB)"
# --no-deps for the plugin: its CUDA runtime libraries are an extra ([with-cuda]) a compile does not need.
# shellcheck disable=SC2086  # the specs are lists of requirements
"$env/bin/python" -m pip install -q --retries 1 --timeout 30 --no-deps $plugin
echo "make_mosaic_gpu_env: 3/3 ptxas, nvdisasm, libdevice and the plugin's own needs ($deps)"
# shellcheck disable=SC2086
"$env/bin/python" -m pip install -q --retries 1 --timeout 30 $deps
echo "$spec" >"$env/.complete"
echo "make_mosaic_gpu_env: $env ($("$env/bin/python" -c 'import jax; print("jax", jax.__version__)'))"
