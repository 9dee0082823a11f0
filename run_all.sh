#!/usr/bin/env bash
# Regenerate the study headless, or run its tests.
#
#   ./run_all.sh [options]          run the notebooks (creates .venv on first use)
#   ./run_all.sh test [pytest args] run the tests (creates .venv on first use)
#   ./run_all.sh setup              only create/refresh .venv and the Jupyter kernel
#   ./run_all.sh lab                open JupyterLab on notebooks/ with the jaxperf kernel
#
# Options for a study run:
#   --backend auto|cpu|gpu|tpu  where to run (default auto: the best present)
#   --quick                     small sizes, for smoke runs; writes under .quick/
#                               unless --output-root is given, so a smoke run
#                               never replaces the committed full results
#   --only LIST                 comma-separated notebook numbers or names (01,02)
#   --versions                  also run 03 (builds one venv per Equinox release)
#   --output-root DIR           where results/ and figures/ go (default: here)
#   --timeout SECONDS           per-cell timeout (default 1800)
#   --host-devices N            forced CPU devices (default 8, like a TPU v3-8)
#   -h, --help                  this text
#
# Each notebook runs through papermill into a staging folder; its outputs move
# into results/<backend>/ and figures/<backend>/ only when it succeeded. One
# failing notebook does not stop the others; the exit code is non-zero if any failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="$root/.venv/bin/python"
nb_dir="${JAXPERF_NOTEBOOKS_DIR:-$root/notebooks}"   # overridable for run_all's own tests

usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "run_all.sh: $*" >&2; echo >&2; usage >&2; exit 2; }
setup() { bash "$root/tools/setup_env.sh" || { echo "run_all.sh: environment setup failed" >&2; exit 3; }; }

case "${1:-}" in
  test)  shift; setup; cd "$root" && exec "$py" -m pytest "$@" ;;
  setup) setup; exit 0 ;;
  lab)   shift; setup; exec "$root/.venv/bin/jupyter" lab --notebook-dir="$root/notebooks" "$@" ;;
esac

backend=auto quick=False only="" versions=0 out_root="" timeout=1800 host_devices=8
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) [ $# -ge 2 ] || die "--backend needs a value"; backend="$2"; shift 2 ;;
    --quick) quick=True; shift ;;
    --only) [ $# -ge 2 ] || die "--only needs a value"; only="$2"; shift 2 ;;
    --versions) versions=1; shift ;;
    --output-root) [ $# -ge 2 ] || die "--output-root needs a value"; out_root="$2"; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; timeout="$2"; shift 2 ;;
    --host-devices) [ $# -ge 2 ] || die "--host-devices needs a value"; host_devices="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1'" ;;
  esac
done
case "$backend" in auto|cpu|gpu|tpu) ;; *) die "--backend '$backend' is not one of auto, cpu, gpu, tpu" ;; esac
[[ "$timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout '$timeout' is not a positive integer (seconds)"
[[ "$host_devices" =~ ^[1-9][0-9]*$ ]] || die "--host-devices '$host_devices' is not a positive integer"
if [ -z "$out_root" ]; then
  if [ "$quick" = True ]; then out_root="$root/.quick"; else out_root="$root"; fi
fi
mkdir -p "$out_root" && out_root="$(cd "$out_root" && pwd)"

# Which notebooks: all numbered ones; 03 (Equinox versions) only with --versions or --only.
mapfile -t all_nbs < <(cd "$nb_dir" && ls [0-9][0-9]_*.ipynb 2>/dev/null)
selected=()
for nb in "${all_nbs[@]}"; do
  num="${nb%%_*}"
  if [ -n "$only" ]; then
    IFS=',' read -ra wanted <<< "$only"
    for w in "${wanted[@]}"; do
      [ "$w" = "$num" ] || [ "$w" = "${nb%.ipynb}" ] || [ "$w" = "$nb" ] && selected+=("$nb")
    done
  elif [ "$num" != 03 ] || [ "$versions" = 1 ]; then
    selected+=("$nb")
  fi
done
[ ${#selected[@]} -gt 0 ] || die "--only '$only' matches no notebook (have: ${all_nbs[*]})"

setup
# Resolve "auto" and check the backend is really here: never simulate one that is not.
resolved="$("$py" -m jaxperf.backend "$backend" "$host_devices" 2>"$out_root/.backend_err")" || {
  echo "run_all.sh: backend '$backend' is not available here: $(tail -1 "$out_root/.backend_err")" >&2
  echo "run_all.sh: nothing was run; that backend is reported as not measured." >&2
  rm -f "$out_root/.backend_err"; exit 4
}
rm -f "$out_root/.backend_err"
echo "run_all.sh: backend=$resolved quick=$quick output root=$out_root notebooks: ${selected[*]}"

stage_root="$out_root/.staging/$(date +%Y%m%d-%H%M%S)-$$"
trap 'echo "run_all.sh: interrupted; staged outputs left in $stage_root, results untouched" >&2; exit 130' INT TERM
declare -a table=()
failed=0
for nb in "${selected[@]}"; do
  name="${nb%.ipynb}"
  stage="$stage_root/$name"
  mkdir -p "$stage/results/$resolved"
  echo; echo "=== $name ($(date +%H:%M:%S))"
  start=$(date +%s)
  JAXPERF_OUTPUT_ROOT="$stage" "$py" -m papermill "$nb_dir/$nb" "$stage/results/$resolved/$nb" \
      -k jaxperf --cwd "$nb_dir" --log-output --progress-bar \
      --execution-timeout "$timeout" \
      -p backend "$resolved" -p quick "$quick" -p output_root "$stage" -p host_devices "$host_devices"
  rc=$?
  secs=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then
    # Move every staged file into place; only now are results/ and figures/ touched.
    outputs=$(cd "$stage" && find . -type f | sed 's|^\./||' | sort)
    (cd "$stage" && find . -type f -print0 | while IFS= read -r -d '' f; do
        mkdir -p "$out_root/$(dirname "$f")" && mv -f "$f" "$out_root/$f"; done)
    rm -rf "$stage"
    summary="$(echo "$outputs" | grep -c .) files: $(echo "$outputs" | grep -E 'summary.md$|\.ipynb$' | tr '\n' ' ')"
    table+=("$(printf '%-32s %-7s %6ss  %s' "$name" ok "$secs" "$summary")")
  else
    failed=$((failed + 1))
    table+=("$(printf '%-32s %-7s %6ss  %s' "$name" FAILED "$secs" "executed copy kept in $stage (results untouched)")")
  fi
done
rmdir "$stage_root" "$out_root/.staging" 2>/dev/null

echo; echo "=== summary (backend=$resolved, quick=$quick, output root=$out_root)"
printf '%-32s %-7s %7s  %s\n' notebook status wall outputs
printf '%s\n' "${table[@]}"
[ $failed -eq 0 ] || { echo "run_all.sh: $failed notebook(s) failed" >&2; exit 1; }
