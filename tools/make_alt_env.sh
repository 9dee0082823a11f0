#!/usr/bin/env bash
# Build a stand-in for a lent machine's image, for the device run's dry run on this CPU
# (tools/device/run.sh --dry-run) and for "an existing environment" with another JAX:
#
#   bash tools/make_alt_env.sh image-tpu   # .envs/image-tpu: Python 3.11, jax/jaxlib 0.10.2 (the lent
#                                          # TPU's), and what run.sh installs there from the
#                                          # machine's own index (tools/device/tpu_index.txt); no
#                                          # equinox, no papermill: they are carried
#   bash tools/make_alt_env.sh image-gpu   # .envs/image-gpu: Python 3.12, jax/jaxlib 0.11.2 and
#                                          # triton 3.6.0 (the lent GPU's), the study's plotting
#                                          # stack, none of the Jupyter stack (that image has none);
#                                          # Equinox, Flax and Optax as the image has them, of
#                                          # versions not known there: here others than the lock's
#                                          # (Equinox 0.13.7: run.sh must put the pinned 0.13.8 first;
#                                          # Flax 0.12.10, whose sources no call carries)
#
# The versions are pinned here (the machines' own versions where known). Needs PyPI, or with
# --offline the wheels in .whl-<backend>/ (then it fails fast if they are not there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:-}"
case "$name" in
  image-tpu)
    pyver=3.11
    # the versions the TPU's own index installed there (2026-12-06)
    spec="jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6 scipy==1.17.1 pandas==3.0.6 matplotlib==3.11.2 seaborn==0.13.2"
    spec="$spec tqdm==4.70.1 optax==0.2.8 flax==0.12.8 jaxtyping==0.3.11 wadler-lindig==0.1.7 ipykernel==7.4.0"
    spec="$spec ipython==9.17.1 jupyter-client==8.10.0 nbclient==0.11.0 nbformat==5.11.1 pyzmq==27.2.0 tornado==6.5.10"
    ;;
  image-gpu)
    pyver=3.12
    spec="jax==0.11.2 jaxlib==0.11.2 triton==3.6.0 numpy==2.5.2 pandas matplotlib seaborn tqdm"
    spec="$spec equinox==0.13.7 flax==0.12.10 optax==0.2.8 jaxtyping==0.3.11"
    ;;
  *) echo "usage: make_alt_env.sh image-tpu|image-gpu [--offline]" >&2; exit 2 ;;
esac
env="$root/.envs/$name"
pip_args=(--retries 1 --timeout 20)
[ "${2:-}" = --offline ] && pip_args=(--no-index --find-links "$root/.whl-${name#image-}")
# .complete holds the spec it was built from: a different spec (or none) rebuilds.
[ -f "$env/.complete" ] && [ "$(cat "$env/.complete")" = "$spec" ] && exit 0
py=""
pyenv_root="$(pyenv root 2>/dev/null || true)"
for cand in "${PYTHON:-}" "python$pyver" ${pyenv_root:+"$pyenv_root"/versions/$pyver*/bin/python3}; do
  [ -n "$cand" ] && "$cand" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$pyver'.split('.'))))" 2>/dev/null \
    && { py="$cand"; break; }
done
[ -n "$py" ] || { echo "make_alt_env: no python$pyver found" >&2; exit 1; }
rm -rf "$env"
"$py" -m venv "$env"
# shellcheck disable=SC2086  # the spec is a list of requirements
"$env/bin/python" -m pip install -q "${pip_args[@]}" $spec
echo "$spec" >"$env/.complete"
echo "make_alt_env: $env ($("$env/bin/python" -c 'import sys, jax; print("python", sys.version.split()[0], "jax", jax.__version__)'))"
