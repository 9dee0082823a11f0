#!/usr/bin/env bash
# Put what a device run (tools/device/run.sh) sent back into results/<backend> and figures/<backend>.
#
#   bash tools/device/unpack.sh DIR
#
# DIR is the device tool's files_at folder: jaxperf_<backend>_results.tar.gz, run.log and
# jaxcache_<backend>.tar.gz (or its .part-* pieces). A study the run published from the commit
# its committed results came from is merged into them (tools/device/merge.py: the study's parts,
# and its reruns, each a command of its own, are told together); from another commit it replaces
# them. The others stay. Then ./run_all.sh render redraws the merged studies. Refused, with nothing written: a dry run's output (results/cpu: no device numbers), a
# tarball holding anything but results/<backend>/** and figures/<backend>/**, a summary made from
# a dirty tree or an unknown commit, or on another backend. The tools' outputs (run.sh --exec, in
# results/<backend>/cli/) are laid over the committed ones when each names the clean commit it came
# from (its provenance.git, or its .provenance.json sidecar). The log goes to results/<backend>/logs/
# (one per command, never replaced), with the machine the call read (machine.json) beside it as
# <log>.machine.json; the compilation cache to .device/, for the next call's carry.
# Then commit results/<backend> and figures/<backend>, and ./run_all.sh render redraws README.md.
set -euo pipefail
proj="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root="${JAXPERF_UNPACK_ROOT:-$proj}"  # where results/ and figures/ go (tests point it elsewhere)
dir="${1:?usage: unpack.sh DIR}"
[ $# -eq 1 ] || { echo "unpack.sh: one argument, the folder the device call's files came back in" >&2; exit 2; }
shopt -s nullglob
# The Python ./run_all.sh runs (the project's .venv first): merge.py reads the declared refactors,
# whose pins only the Python that wrote them reads the same (tools/runall/moves.py).
py="${JAXPERF_PYTHON:-$proj/.venv/bin/python}"
[ -x "$py" ] || py="$(command -v python3.12 || command -v python3)"
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
python3 - "$stage/results/$backend" "$backend" "$proj/tools/device" >"$stage/studies.txt" <<'PY' || exit 1
import json, pathlib, sys
where, backend = pathlib.Path(sys.argv[1]), sys.argv[2]
sys.path.insert(0, sys.argv[3])
from manifest import SIDECAR, carried  # each tool output names its own commit (run.sh: manifest.py stamp)
found = sorted(where.glob("*/summary.json"))
cli = sorted(p for p in (where / "cli").rglob("*") if p.is_file() and not p.name.endswith(SIDECAR))
for path in cli:
    git = carried(path) or {}
    if git.get("dirty") is not False or len(str(git.get("commit", ""))) != 40:
        sys.exit(f"unpack.sh: refusing the tools' outputs: {path.relative_to(where)} names git={git or None} "
                 "(each must carry the clean commit it came from)")
if not found and not cli:
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
how=()
for study in "${studies[@]}"; do
  mkdir -p "$root/results/$backend" "$root/figures/$backend"
  done_how="$("$py" "$proj/tools/device/merge.py" "$root/results/$backend/$study" "$stage/results/$backend/$study")" || exit 1
  how+=("$study $done_how")
  rm -f "$root/figures/$backend/${study}_"*
  for f in "$stage/figures/$backend/${study}_"*; do mv "$f" "$root/figures/$backend/"; done
done
for nb in "$stage/results/$backend"/*.ipynb; do
  # a part's run stands for the whole merged study: a render injects no part (merge.py empties it too)
  "$py" "$proj/tools/device/merge.py" --whole "$nb" && mv "$nb" "$root/results/$backend/"
done
if [ -d "$stage/results/$backend/cli" ]; then
  mkdir -p "$root/results/$backend/cli" && cp -R "$stage/results/$backend/cli/." "$root/results/$backend/cli/"
  cli_how="cli laid over "
fi
# One log per command, never replaced: named by when the run started (its first line) and its digest.
log="none"
if [ -f "$dir/run.log" ]; then
  started="$(head -c 200 "$dir/run.log" | { grep -o -m 1 '[0-9]\{4\}-[0-9-]*T[0-9:]*Z' || true; } | tr -d ':-')"
  log="results/$backend/logs/run-${started:-$(date -u +%Y%m%dT%H%M%SZ)}-$(sha1sum "$dir/run.log" | cut -c1-8).log"
  mkdir -p "$root/results/$backend/logs" && cp "$dir/run.log" "$root/$log"
  [ ! -f "$dir/machine.json" ] || cp "$dir/machine.json" "$root/${log%.log}.machine.json"
fi
# The compilation cache, for the next call's carry: whole, or in the parts run.sh split it into.
parts=("$dir/jaxcache_$backend.tar.gz".part-*)
if [ "${#parts[@]}" -gt 0 ]; then
  mkdir -p "$proj/.device" && cat "${parts[@]}" >"$proj/.device/jaxcache_$backend.tar.gz"
elif [ -f "$dir/jaxcache_$backend.tar.gz" ]; then
  mkdir -p "$proj/.device" && cp "$dir/jaxcache_$backend.tar.gz" "$proj/.device/"
fi
echo "unpack.sh: results/$backend and figures/$backend: ${how[*]:-no study} ${cli_how:-}(log: $log)"
[ "${#how[@]}" -eq 0 ] || echo "unpack.sh: now ./run_all.sh render --backend $backend: the merged records tell each study whole"
