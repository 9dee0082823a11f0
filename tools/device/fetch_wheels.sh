#!/usr/bin/env bash
# Download, here, the wheels a lent machine lacks for the study's device run (tools/device/run.sh),
# into .whl-<backend>/ (git-ignored; name it in the device call's carry), then check that they
# install as run.sh installs them (--no-index --no-deps --target).
#
#   bash tools/device/fetch_wheels.sh --backend tpu|gpu [--flax VERSION]
#
# tpu: Python 3.11 (the TPU image's). Equinox (pinned: the study hooks its internals) and papermill,
#      with every need of theirs, less the machine's JAX and NumPy stack and what run.sh installs
#      from the machine's own index (tools/device/tpu_index.txt).
# gpu: Python 3.12 (the GPU image's). The same, plus the Jupyter stack papermill drives (that image
#      has no papermill, nbclient, nbformat or ipykernel), with every need of theirs: which versions
#      the image holds is not known, so run.sh installs a carried wheel only where it lacks the
#      package, except the pinned Equinox.
# Notebook 11 runs Flax's own benchmark from the source distribution of the Flax that runs there: the
# TPU index's pinned Flax's is carried; the GPU image's Flax version is not known before a call prints
# it (tools/device/machine.py), so --flax VERSION carries that version's (without it, notebook 11
# there reports "Flax's suite not run: its sources are not carried").
# Equinox is pinned (run.sh puts it first on PYTHONPATH, ahead of any image's own): the study
# hooks its internals, checked on the versions in jaxperf.private_api.CHECKED.
# Needs PyPI here. PYTHON picks the Python whose pip downloads (default .venv/bin/python, else python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
[ "${1:-}" = --backend ] || { echo "usage: fetch_wheels.sh --backend tpu|gpu [--flax VERSION]" >&2; exit 2; }
backend="${2:-}" flax=""
case "${3:-}" in
  "") ;;
  --flax) flax="${4:?--flax needs a version, e.g. 0.12.12}" ;;
  *) echo "fetch_wheels.sh: unknown option '$3' (allowed: --flax VERSION)" >&2; exit 2 ;;
esac
case "$backend" in
  tpu) pyver=3.11; want=(equinox==0.13.8 papermill==2.7.0); have=tools/device/tpu_index.txt ;;
  gpu) pyver=3.12; want=(equinox==0.13.8 papermill==2.7.0 ipykernel nbclient nbformat); have=/dev/null ;;
  *) echo "fetch_wheels.sh: --backend '$backend' is not allowed: tpu or gpu" >&2; exit 2 ;;
esac
py="${PYTHON:-}"
[ -n "$py" ] || { [ -x .venv/bin/python ] && py=.venv/bin/python || py=python3; }
dest=".whl-$backend"
git check-ignore -q "$dest/probe.whl" 2>/dev/null || { echo "fetch_wheels.sh: $dest/ is not git-ignored" >&2; exit 2; }
rm -rf "$dest" && mkdir -p "$dest"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64)
"$py" -m pip download -q --only-binary=:all: --python-version "$pyver" --implementation cp "${platforms[@]}" \
  -d "$dest" "${want[@]}"
# Never carried: the machine's own JAX stack; nor what the machine has (its image or its own index).
never='^(jax|jaxlib|jax-.*|libtpu.*|triton|nvidia-.*|numpy|scipy|ml-dtypes|opt-einsum)$'
mapfile -t present < <(grep -Ev '^\s*(#|$)' "$have" | tr 'A-Z_.' 'a-z--')
for whl in "$dest"/*.whl; do
  name="$(basename "$whl" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')"
  keep=1
  [[ "$name" =~ $never ]] && keep=0
  for p in "${present[@]}"; do [ "$p" = "$name" ] && keep=0; done
  case " ${want[*]} " in *" $name=="*) keep=1 ;; esac  # pinned here: carried even if the machine has one
  [ "$keep" = 1 ] || rm -f "$whl"
done
# Notebook 11 runs Flax's own benchmark from the source distribution of the Flax that runs.
flax_pin="${flax:+flax==$flax}"
[ -n "$flax_pin" ] || flax_pin="$(grep -E '^flax==' "$have" || true)"
[ -z "$flax_pin" ] || "$py" -m pip download -q --no-binary :all: --no-deps -d "$dest" "$flax_pin"
target="$(mktemp -d)"
trap 'rm -rf "$target"' EXIT
# The check installs with the machine's Python version, as run.sh will.
check_py=""
pyenv_root="$(pyenv root 2>/dev/null || true)"
for cand in "python$pyver" ${pyenv_root:+"$pyenv_root"/versions/$pyver*/bin/python3}; do
  "$cand" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$pyver'.split('.'))))" 2>/dev/null \
    && { check_py="$cand"; break; }
done
[ -n "$check_py" ] || { echo "fetch_wheels.sh: no python$pyver here to check the wheels with" >&2; exit 1; }
"$check_py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$target" "$dest"/*.whl
echo "fetch_wheels.sh: $dest/ for Python $pyver ($backend), installs with --no-index --no-deps:"
ls -l "$dest"/* | awk '{printf "  %s (%d bytes)\n", $NF, $5}'
total=$(du -cb "$dest"/* | tail -1 | cut -f1)
[ "$total" -lt $((32 * 1024 * 1024)) ] || { echo "fetch_wheels.sh: $dest holds $total bytes: too much to carry" >&2; exit 1; }
echo "fetch_wheels.sh: $total bytes in all; name $dest in the device call's carry"
