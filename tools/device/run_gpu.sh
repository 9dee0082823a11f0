#!/usr/bin/env bash
# The device run of issue 15: the one command a lent GPU machine executes
# (device `run`: `bash tools/device/run_gpu.sh`), inside 7.5 minutes.
#
#   bash tools/device/run_gpu.sh [--dry-run] [--only PART[,PART...]] [--out DIR] [--python PATH]
#
# On the GPU machine (Python 3.12 with its own jax 0.11.2, no network, no papermill):
# installs the carried wheels in .whl/ (if any) into a folder of its own without touching jax,
# puts lib/ on PYTHONPATH, then runs each part of jaxperf_study.gpu (python -m jaxperf_study.gpu.run
# PART) as its own process under its own time limit, so a slow part cannot starve the
# rest; then the report; then packs results/<backend> and figures/<backend> into
# $OUT/jaxperf_gpu_results.tar.gz, with the log beside it ($OUT/run_gpu.log).
# tools/device/unpack.sh puts them into results/gpu and figures/gpu here.
#
# --dry-run (or JAXPERF_DEVICE_DRY=1): every part at tiny sizes on the CPU (Pallas in
# interpret mode) into a temporary folder; it proves the script, never a GPU number.
# JAXPERF_GIT_COMMIT=<hash> names the commit in the records (the device copy has no .git).
# JAXPERF_DEVICE_TOTAL_S (default 450) caps the whole run; each part's limit shrinks to fit.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root" || exit 2
dry="${JAXPERF_DEVICE_DRY:-0}"
only=""
out="${OUT:-}"
python="${JAXPERF_DEVICE_PYTHON:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --only) only="${2:?--only needs a list of parts}"; shift ;;
    --out) out="${2:?--out needs a folder}"; shift ;;
    --python) python="${2:?--python needs a path}"; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run_gpu.sh: unknown option '$1' (allowed: --dry-run, --only, --out, --python)" >&2; exit 2 ;;
  esac
  shift
done
[ "$dry" = 1 ] || [ "$dry" = 0 ] || { echo "run_gpu.sh: JAXPERF_DEVICE_DRY='$dry' is not 0 or 1" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/jaxperf_device.XXXXXX")"
[ -n "$out" ] || out="$work/out"
mkdir -p "$out" || exit 2
log="$out/run_gpu.log"
exec > >(tee -a "$log") 2>&1
start=$(date +%s)
total="${JAXPERF_DEVICE_TOTAL_S:-450}"
echo "run_gpu.sh: $(date -u +%FT%TZ) dry=$dry work=$work out=$out total=${total}s"

# The Python: the one named, else the first python3 with a working jax (and pandas: a half-built env has no run deps).
if [ -z "$python" ]; then
  for cand in "$root/.envs/alt-jax-0.11.2/bin/python" "$root/.venv/bin/python" python3 /opt/torch/.venv/bin/python3; do
    [ "$dry" = 1 ] || case "$cand" in "$root"/*) continue ;; esac
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import jax, pandas' 2>/dev/null; then python="$cand"; break; fi
  done
fi
[ -n "$python" ] || { echo "run_gpu.sh: no Python with jax found (give --python PATH)" >&2; exit 3; }

# Carried pure-Python wheels (tools/device/fetch_wheels.sh), never jax itself: the
# device README's install (--target), into the run's folder, ahead of the image's packages.
pypath="$root/lib"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$work/site" .whl/*.whl \
    || { echo "run_gpu.sh: installing the carried wheels failed" >&2; exit 3; }
  pypath="$root/lib:$work/site"
  echo "run_gpu.sh: carried wheels: $(cd .whl && echo *.whl)"
fi
export PYTHONPATH="$pypath${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 JAXPERF_PROGRESS=text MPLBACKEND=Agg
export MPLCONFIGDIR="$work/mpl"  # matplotlib builds its font cache once, for every part
[ -n "${JAXPERF_GIT_COMMIT:-}" ] || JAXPERF_GIT_COMMIT="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
export JAXPERF_GIT_COMMIT
dryflag=()
if [ "$dry" = 1 ]; then dryflag=(--dry); export JAX_PLATFORMS=cpu; fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
"$python" -c 'import sys, jax, jaxlib; print("python", sys.version.split()[0], "jax", jax.__version__, "jaxlib", jaxlib.__version__)'

backend=$([ "$dry" = 1 ] && echo cpu || echo gpu)
run_dir="$work/results/$backend/run"
mkdir -p "$run_dir"
reserve=25  # seconds kept for the report and the packing
mapfile -t budgets < <("$python" -m jaxperf_study.gpu.run --budgets "${dryflag[@]}") || exit 3
for line in "${budgets[@]}"; do
  part="${line% *}"; budget="${line#* }"
  if [ -n "$only" ] && [[ ",$only," != *",$part,"* ]]; then continue; fi
  left=$(( total - ($(date +%s) - start) - reserve ))
  limit=$(( budget + 30 < left ? budget + 30 : left ))
  if [ "$limit" -lt 20 ]; then
    echo "run_gpu.sh: $part not started: ${left}s left of ${total}s"; printf '%s\t%s\t%s\n' "$part" skipped 0 >>"$run_dir/parts.tsv"; continue
  fi
  echo "=== $part (budget ${budget}s, limit ${limit}s) $(date -u +%TZ)"
  t0=$(date +%s)
  JAXPERF_PART_BUDGET_S=$(( limit - 30 > 10 ? limit - 30 : 10 )) timeout -k 10 "$limit" \
    "$python" -m jaxperf_study.gpu.run "$part" --output-root "$work" "${dryflag[@]}"
  rc=$?
  printf '%s\t%s\t%s\n' "$part" "$rc" "$(( $(date +%s) - t0 ))" >>"$run_dir/parts.tsv"
  echo "=== $part: exit $rc after $(( $(date +%s) - t0 ))s"
done
JAX_PLATFORMS=cpu timeout 60 "$python" -m jaxperf_study.gpu.run report --output-root "$work" "${dryflag[@]}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv
echo "run_gpu.sh: done in $(( $(date +%s) - start ))s"
tar -czf "$out/jaxperf_gpu_results.tar.gz" -C "$work" results figures 2>/dev/null \
  || tar -czf "$out/jaxperf_gpu_results.tar.gz" -C "$work" results
ls -l "$out"
