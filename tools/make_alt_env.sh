#!/usr/bin/env bash
# Build .envs/alt-jax-0.11.2: a stand-in for the lent GPU machine's image (and for "an
# existing environment" with another JAX): Python 3.12 with jax/jaxlib 0.11.2 and
# triton 3.6.0 (the versions that image has), and the run dependencies that image has
# (tools/device/image_packages.txt), but none of the Jupyter stack. Used by
# tests/test_run_all.py (`./run_all.sh --python PATH` adds what is missing) and
# tests/test_gpu_script.py (the device run's dry run, with the image's JAX and Triton).
# Needs PyPI, or with --offline the wheels in .whl/ (then it fails fast if they are not there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
env="$root/.envs/alt-jax-0.11.2"
spec="jax==0.11.2 jaxlib==0.11.2 triton==3.6.0 numpy==2.5.2 equinox==0.13.8 pandas matplotlib seaborn tqdm"
pip_args=(--retries 1 --timeout 20)
[ "${1:-}" = --offline ] && pip_args=(--no-index --find-links "$root/.whl")
# .complete holds the spec it was built from: a different spec (or none) rebuilds.
[ -f "$env/.complete" ] && [ "$(cat "$env/.complete")" = "$spec" ] && exit 0
py=""
pyenv_root="$(pyenv root 2>/dev/null || true)"
for cand in "${PYTHON:-}" python3.12 ${pyenv_root:+"$pyenv_root"/versions/3.12*/bin/python3}; do
  [ -n "$cand" ] && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { py="$cand"; break; }
done
[ -n "$py" ] || { echo "make_alt_env: no python3.12 found" >&2; exit 1; }
rm -rf "$env"
"$py" -m venv "$env"
# shellcheck disable=SC2086  # the spec is a list of requirements
"$env/bin/python" -m pip install -q "${pip_args[@]}" $spec
echo "$spec" >"$env/.complete"
echo "make_alt_env: $env ($("$env/bin/python" -c 'import jax, triton; print("jax", jax.__version__, "triton", triton.__version__)'))"
