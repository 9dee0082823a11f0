#!/usr/bin/env bash
# Put what a device run sent back into results/gpu and figures/gpu of this project.
#
#   bash tools/device/unpack.sh DIR [--force | --merge]
#
# DIR is the device tool's files_at folder (it holds jaxperf_gpu_results.tar.gz and
# run_gpu.log). Refuses a dry run's output (results/cpu: no GPU numbers), a tarball
# holding anything but results/gpu/** and figures/gpu/**, or a run whose summary does
# not name a GPU. Existing results/gpu and figures/gpu are replaced only with --force;
# --merge lays a rerun of some parts (run_gpu.sh --only ...) over them, keeps both
# runs' part logs, and rewrites the report here (python -m jaxperf_study.gpu.run report).
set -euo pipefail
proj="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root="${JAXPERF_UNPACK_ROOT:-$proj}"  # where results/ and figures/ go (tests point it elsewhere)
dir="${1:?usage: unpack.sh DIR [--force | --merge]}"
mode="${2:-}"
case "$mode" in ""|--force|--merge) ;; *) echo "unpack.sh: unknown option '$mode' (allowed: --force, --merge)" >&2; exit 2 ;; esac
tarball="$dir/jaxperf_gpu_results.tar.gz"
[ -f "$tarball" ] || { echo "unpack.sh: no $tarball (did the device run finish?)" >&2; exit 1; }
bad="$(tar -tzf "$tarball" | grep -Ev '^(results|figures)/$|^(results|figures)/gpu(/|$)' || true)"
[ -z "$bad" ] || { echo "unpack.sh: refusing $tarball: it holds more than results/gpu and figures/gpu:" >&2; head <<<"$bad" >&2; exit 1; }  # no pipe: SIGPIPE would make the exit 141
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
tar -xzf "$tarball" -C "$stage"
python3 - "$stage/results/gpu/run/summary.json" <<'PY' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))
if s.get("dry_run") or s.get("backend") != "gpu":
    sys.exit(f"unpack.sh: refusing: the run's summary says dry_run={s.get('dry_run')}, backend={s.get('backend')}")
print(f"unpack.sh: {s.get('device')}: " + ", ".join(f"{p['part']} {p['status']}" for p in s.get("parts", [])))
PY
[ -f "$dir/run_gpu.log" ] && cp "$dir/run_gpu.log" "$stage/results/gpu/run/run_gpu.$(date -u +%Y%m%dT%H%M%S).log"
if [ "$mode" = --merge ]; then
  old="$root/results/gpu/run/parts.tsv"
  [ -f "$old" ] && cat "$old" "$stage/results/gpu/run/parts.tsv" >"$stage/parts.tsv" && mv "$stage/parts.tsv" "$stage/results/gpu/run/parts.tsv"
  for sub in results/gpu figures/gpu; do
    [ -d "$stage/$sub" ] && mkdir -p "$root/$sub" && cp -R "$stage/$sub/." "$root/$sub/"
  done
  py="${PYTHON:-$proj/.venv/bin/python}"
  [ -x "$py" ] || py=python3
  PYTHONPATH="$proj/lib" JAX_PLATFORMS=cpu "$py" -m jaxperf_study.gpu.run report --output-root "$root"
  echo "unpack.sh: merged into results/gpu and figures/gpu; read results/gpu/run/summary.md"
  exit 0
fi
for sub in results/gpu figures/gpu; do
  if [ -e "$root/$sub" ] && [ "$mode" != --force ]; then
    echo "unpack.sh: $sub exists; pass --force to replace it (or --merge to lay a rerun over it)" >&2; exit 1
  fi
done
for sub in results/gpu figures/gpu; do
  rm -rf "${root:?}/$sub"
  if [ -d "$stage/$sub" ]; then mkdir -p "$root/$(dirname "$sub")" && mv "$stage/$sub" "$root/$sub"; fi
done
echo "unpack.sh: unpacked into results/gpu and figures/gpu; read results/gpu/run/summary.md"
