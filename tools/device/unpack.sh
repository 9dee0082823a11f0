#!/usr/bin/env bash
# Put what a device run (tools/device/run.sh) sent back into results/<backend> and figures/<backend>.
#
#   bash tools/device/unpack.sh DIR
#
# DIR is the device tool's files_at folder: jaxperf_<backend>_results.tar.gz, run.log and
# jaxcache_<backend>.tar.gz. Each notebook the run published replaces that notebook's results
# and figures here; the others stay, so runs of some notebooks (run.sh --only) merge into one
# result. Refused, with nothing written: a dry run's output (results/cpu: no device numbers), a
# tarball holding anything but results/<backend>/** and figures/<backend>/**, a summary made from
# a dirty tree or an unknown commit, or on another backend. The tools' outputs (run.sh --exec, in
# results/<backend>/cli/) are laid over the committed ones, from a clean commit too. The log goes to
# results/<backend>/logs/; the compilation cache to .device/, for the next call's carry.
# Then commit results/<backend> and figures/<backend>, and ./run_all.sh render redraws README.md.
set -euo pipefail
proj="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root="${JAXPERF_UNPACK_ROOT:-$proj}"  # where results/ and figures/ go (tests point it elsewhere)
dir="${1:?usage: unpack.sh DIR}"
[ $# -eq 1 ] || { echo "unpack.sh: one argument, the folder the device call's files came back in" >&2; exit 2; }
shopt -s nullglob
tarballs=("$dir"/jaxperf_*_results.tar.gz)
[ "${#tarballs[@]}" -eq 1 ] || { echo "unpack.sh: expected one jaxperf_<backend>_results.tar.gz in $dir (did the run publish?)" >&2; exit 1; }
tarball="${tarballs[0]}"
backend="$(basename "$tarball")"; backend="${backend#jaxperf_}"; backend="${backend%_results.tar.gz}"
case "$backend" in tpu|gpu) ;; *) echo "unpack.sh: refusing $tarball: backend '$backend' is not tpu or gpu" >&2; exit 1 ;; esac
bad="$(tar -tzf "$tarball" | grep -Ev "^(results|figures)/\$|^(results|figures)/$backend(/|\$)" || true)"
# no pipe into head: a head that quits first would make the exit SIGPIPE's 141
[ -z "$bad" ] || { echo "unpack.sh: refusing $tarball: it holds more than results/$backend and figures/$backend:" >&2; head <<<"$bad" >&2; exit 1; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
tar -xzf "$tarball" -C "$stage"
python3 - "$stage/results/$backend" "$backend" >"$stage/studies.txt" <<'PY' || exit 1
import json, pathlib, sys
where, backend = pathlib.Path(sys.argv[1]), sys.argv[2]
found = sorted(where.glob("*/summary.json"))
cli = where / "cli" / "tree.json"
if cli.is_file():
    tree = json.loads(cli.read_text())
    if tree.get("dirty") is not False or len(str(tree.get("commit", ""))) != 40:
        sys.exit(f"unpack.sh: refusing the tools' outputs: tree={tree} (they must come from a clean commit)")
elif not found:
    sys.exit("unpack.sh: refusing: the run published nothing (no results/*/summary.json, no tools' outputs)")
for path in found:
    s = json.loads(path.read_text())
    git = s.get("provenance", {}).get("git", {})
    if s.get("backend") != backend or git.get("dirty") is not False or len(str(git.get("commit", ""))) != 40:
        sys.exit(f"unpack.sh: refusing {path.parent.name}: backend={s.get('backend')}, git={git} "
                 f"(a result must come from a clean commit, on {backend})")
    print(path.parent.name)
PY
mapfile -t studies <"$stage/studies.txt"
for study in "${studies[@]}"; do
  rm -rf "${root:?}/results/$backend/$study"
  mkdir -p "$root/results/$backend" "$root/figures/$backend"
  mv "$stage/results/$backend/$study" "$root/results/$backend/$study"
  rm -f "$root/figures/$backend/${study}_"*
  for f in "$stage/figures/$backend/${study}_"*; do mv "$f" "$root/figures/$backend/"; done
done
for nb in "$stage/results/$backend"/*.ipynb; do mv "$nb" "$root/results/$backend/"; done
if [ -d "$stage/results/$backend/cli" ]; then
  mkdir -p "$root/results/$backend/cli" && cp -R "$stage/results/$backend/cli/." "$root/results/$backend/cli/"
  studies+=("cli")
fi
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
if [ -f "$dir/run.log" ]; then mkdir -p "$root/results/$backend/logs" && cp "$dir/run.log" "$root/results/$backend/logs/run-$stamp.log"; fi
if [ -f "$dir/jaxcache_$backend.tar.gz" ]; then mkdir -p "$proj/.device" && cp "$dir/jaxcache_$backend.tar.gz" "$proj/.device/"; fi
echo "unpack.sh: results/$backend and figures/$backend: ${studies[*]} (log: results/$backend/logs/run-$stamp.log)"
