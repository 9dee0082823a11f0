#!/usr/bin/env bash
# Put what a device run sent back into results/gpu and figures/gpu of this project.
#
#   bash tools/device/unpack.sh DIR [--force]
#
# DIR is the device tool's files_at folder (it holds jaxperf_gpu_results.tar.gz and
# run_gpu.log). Refuses a dry run's output (results/cpu: no GPU numbers), a tarball
# holding anything but results/gpu/** and figures/gpu/**, or a run whose summary does
# not name a GPU; replaces existing results/gpu and figures/gpu only with --force.
set -euo pipefail
root="${JAXPERF_UNPACK_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"  # tests point it elsewhere
dir="${1:?usage: unpack.sh DIR [--force]}"
force="${2:-}"
[ -z "$force" ] || [ "$force" = --force ] || { echo "unpack.sh: unknown option '$force' (allowed: --force)" >&2; exit 2; }
tarball="$dir/jaxperf_gpu_results.tar.gz"
[ -f "$tarball" ] || { echo "unpack.sh: no $tarball (did the device run finish?)" >&2; exit 1; }
bad="$(tar -tzf "$tarball" | grep -Ev '^(results|figures)/$|^(results|figures)/gpu(/|$)' || true)"
[ -z "$bad" ] || { echo "unpack.sh: refusing $tarball: it holds more than results/gpu and figures/gpu:" >&2; echo "$bad" | head >&2; exit 1; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
tar -xzf "$tarball" -C "$stage"
summary="$stage/results/gpu/run/summary.json"
python3 - "$summary" <<'PY' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))
if s.get("dry_run") or s.get("backend") != "gpu":
    sys.exit(f"unpack.sh: refusing: the run's summary says dry_run={s.get('dry_run')}, backend={s.get('backend')}")
print(f"unpack.sh: {s.get('device')}: " + ", ".join(f"{p['part']} {p['status']}" for p in s.get("parts", [])))
PY
for sub in results/gpu figures/gpu; do
  if [ -e "$root/$sub" ] && [ "$force" != --force ]; then
    echo "unpack.sh: $sub exists; pass --force to replace it" >&2; exit 1
  fi
done
for sub in results/gpu figures/gpu; do
  rm -rf "${root:?}/$sub"
  [ -d "$stage/$sub" ] && mkdir -p "$root/$(dirname "$sub")" && mv "$stage/$sub" "$root/$sub"
done
[ -f "$dir/run_gpu.log" ] && cp "$dir/run_gpu.log" "$root/results/gpu/run/run_gpu.log"
echo "unpack.sh: unpacked into results/gpu and figures/gpu; read results/gpu/run/summary.md"
