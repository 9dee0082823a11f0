#!/usr/bin/env bash
# Download, on this machine, the pure-Python wheels the lent GPU machine lacks for
# jaxperf's device run (Python 3.12, x86-64; that machine has no network), into .whl/
# (git-ignored), with the device README's pip command; then check that the set
# installs there as run_gpu.sh will install it (--no-index --no-deps --target).
#
#   bash tools/device/fetch_wheels.sh          # what to carry: tools/device/wheels.py plan
#
# The device call then names .whl in `carry`. Needs PyPI here; PYTHON picks the
# Python whose pip downloads (default .venv/bin/python, else python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
py="${PYTHON:-}"
[ -n "$py" ] || { [ -x .venv/bin/python ] && py=.venv/bin/python || py=python3; }
git check-ignore -q .whl/probe.whl 2>/dev/null || echo /.whl/ >>.git/info/exclude
mapfile -t wanted < <("$py" tools/device/wheels.py plan)
mkdir -p .whl
rm -f .whl/*.whl
if [ "${#wanted[@]}" -eq 0 ] || [ -z "${wanted[0]}" ]; then
  echo "fetch_wheels: nothing to carry"; exit 0
fi
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
for req in "${wanted[@]}"; do
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d .whl "$req"
done
"$py" tools/device/wheels.py deps .whl
target="$(mktemp -d)"
trap 'rm -rf "$target"' EXIT
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$target" .whl/*.whl
echo "fetch_wheels: these install with --no-index --no-deps:"
ls -l .whl/*.whl | awk '{printf "  %s (%d bytes)\n", $NF, $5}'
total=$(du -cb .whl/*.whl | tail -1 | cut -f1)
[ "$total" -lt $((16 * 1024 * 1024)) ] || { echo "fetch_wheels: .whl holds $total bytes: too much to carry" >&2; exit 1; }
echo "fetch_wheels: $total bytes in all; name .whl in the device call's carry"
