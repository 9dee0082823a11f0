#!/usr/bin/env bash
# Build .envs/alt-jax-0.11.2: Python 3.12 with jax/jaxlib 0.11.2, a JAX other than
# the pins, standing in for "an existing environment" when testing
# `./run_all.sh --python PATH` (tests/test_run_all.py). Needs PyPI, or with
# --offline the wheels in .whl/ (then it fails fast if they are not there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
env="$root/.envs/alt-jax-0.11.2"
pip_args=()
[ "${1:-}" = --offline ] && pip_args=(--no-index --find-links "$root/.whl")
[ -f "$env/.complete" ] && exit 0
py=""
pyenv_root="$(pyenv root 2>/dev/null || true)"
for cand in "${PYTHON:-}" python3.12 ${pyenv_root:+"$pyenv_root"/versions/3.12*/bin/python3}; do
  [ -n "$cand" ] && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { py="$cand"; break; }
done
[ -n "$py" ] || { echo "make_alt_env: no python3.12 found" >&2; exit 1; }
rm -rf "$env"
"$py" -m venv "$env"
"$env/bin/python" -m pip install -q "${pip_args[@]}" jax==0.11.2 jaxlib==0.11.2
touch "$env/.complete"
echo "make_alt_env: $env ($("$env/bin/python" -c 'import jax; print("jax", jax.__version__)'))"
