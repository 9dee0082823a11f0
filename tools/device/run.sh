#!/usr/bin/env bash
# The study on a lent accelerator: the one command a device call runs. The same notebooks as
# on the CPU, executed by papermill through ./run_all.sh, with the backend changed.
#
#   bash tools/device/run.sh --backend tpu|gpu [--only LIST|--only none] [--dry-run] [--out DIR]
#                            [--python PATH] [--exec COMMAND]... [-- more ./run_all.sh options]
#
# On the machine (its own Python and JAX, no network, maybe no sockets): installs what its own
# package index holds (tools/device/<backend>_index.txt, TPU only) and the wheels carried in
# .whl-<backend>/ (tools/device/fetch_wheels.sh) into folders of their own, after the machine's
# own packages on PYTHONPATH, never touching its JAX; then ./run_all.sh --backend B --python P
# --all (or --only LIST) into an output root of its own. Papermill runs each notebook's cells in
# its own process where no socket can be opened (run_all.sh's in-process engine). Every
# measurement runs in fresh processes; the notebook's own process never opens the accelerator.
# Then it packs results/<backend> and figures/<backend> into $OUT/jaxperf_<backend>_results.tar.gz,
# with run.log, and JAX's persistent compilation cache into $OUT/jaxcache_<backend>.tar.gz (carry
# .device back in the next call: `bash tools/device/unpack.sh DIR` puts it in .device/ too).
# A notebook that failed or ran out of time publishes nothing; the others are kept.
# --exec COMMAND: after the notebooks, run COMMAND (bash) in the same environment, output in run.log
# (the tools on the device: --exec "python -m jaxperf diagnose pkg.mod:factory --json \$JAXPERF_CLI_OUT/x.json":
# what it writes under $JAXPERF_CLI_OUT is packed as results/<backend>/cli/, each file stamped with the
# run's commit: tools/device/manifest.py stamp); --only none: no notebook.
#
# --dry-run: the same on this CPU, in the stand-in for the machine's image (.envs/image-<backend>,
# tools/make_alt_env.sh), with --backend cpu --quick: it proves the command, never a device number.
# The commit comes from .device/manifest.json (tools/device/manifest.py write, here, before the call).
# JAXPERF_DEVICE_TOTAL_S (default 540) caps the run: run_all.sh is stopped before the call's limit.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root" || exit 2
backend="" only="" dry=0 out="${OUT:-}" python="" extra=() execs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend="${2:-}"; shift ;;
    --only) only="${2:?--only needs a list of notebooks, e.g. 01,02}"; shift ;;
    --dry-run) dry=1 ;;
    --out) out="${2:?--out needs a folder}"; shift ;;
    --python) python="${2:?--python needs a path}"; shift ;;
    --exec) execs+=("${2:?--exec needs a command}"); shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (allowed: --backend, --only, --dry-run, --out, --python, --exec, --)" >&2; exit 2 ;;
  esac
  shift
done
case "$backend" in tpu|gpu) ;; *) echo "run.sh: --backend '$backend' is not allowed: tpu or gpu" >&2; exit 2 ;; esac
work="$(mktemp -d "${TMPDIR:-/tmp}/jaxperf_device.XXXXXX")"
[ -n "$out" ] || out="$work/out"
total="${JAXPERF_DEVICE_TOTAL_S:-540}"
[[ $total =~ ^[0-9]+$ ]] || { echo "run.sh: JAXPERF_DEVICE_TOTAL_S='$total' is not allowed: whole seconds, e.g. 540" >&2; exit 2; }
mkdir -p "$out" || exit 2
log="$out/run.log"
exec > >(tee -a "$log") 2>&1
start=$(date +%s)
echo "run.sh: $(date -u +%FT%TZ) backend=$backend dry=$dry only=${only:-all} work=$work total=${total}s"

if [ -z "$python" ]; then
  if [ "$dry" = 1 ]; then python="$root/.envs/image-$backend/bin/python"; else python="$(command -v python3)"; fi
fi
[ -x "$python" ] || { echo "run.sh: no Python at '$python' (dry run: bash tools/make_alt_env.sh image-$backend)" >&2; exit 3; }
"$python" -c 'import sys, jax, jaxlib; print("run.sh: python", sys.version.split()[0], "jax", jax.__version__, "jaxlib", jaxlib.__version__)' \
  || { echo "run.sh: $python has no working jax" >&2; exit 3; }

# What the machine's own index holds (TPU), then the carried wheels: each in a folder of its own,
# after the machine's packages on PYTHONPATH, so its JAX stays first. A warm machine keeps /tmp
# between calls: the folders are reused while the lists and the wheels are the same.
site="${TMPDIR:-/tmp}/jaxperf_device_site"
index="tools/device/${backend}_index.txt"
stamp="$( { echo "$python $dry"; cat "$index" 2>/dev/null; ls ".whl-$backend" 2>/dev/null; } | sha1sum | cut -c1-16)"
pypath="$root/lib"
if [ -f "$site/stamp" ] && [ "$(cat "$site/stamp")" = "$stamp" ]; then
  for sub in index carried; do [ -d "$site/$sub" ] && pypath="$pypath:$site/$sub"; done
  echo "run.sh: reusing $site (installed by an earlier call)"
else
  rm -rf "$site" && mkdir -p "$site"
  if [ "$dry" = 0 ] && [ -f "$index" ] && [ -d /opt/pypi/simple ]; then
    mapfile -t wanted < <(grep -Ev '^\s*(#|$)' "$index")
    held="$work/held.txt"  # the machine's JAX and NumPy, as installed: the index's packages must fit them
    "$python" -c 'import importlib.metadata as m
for n in ("jax", "jaxlib", "numpy", "scipy", "libtpu"):
    try: print(f"{n}=={m.version(n)}")
    except m.PackageNotFoundError: pass' >"$held"
    t0=$(date +%s)
    PIP_CONFIG_FILE=/dev/null "$python" -m pip install --isolated -q --only-binary=:all: --no-cache-dir --no-compile \
      --index-url file:///opt/pypi/simple -c "$held" --target "$site/index" "${wanted[@]}" \
      || { echo "run.sh: installing from the machine's own index failed" >&2; exit 3; }
    pypath="$pypath:$site/index"
    echo "run.sh: from the machine's index in $(( $(date +%s) - t0 )) s: ${wanted[*]}"
  fi
  if compgen -G ".whl-$backend/*.whl" >/dev/null; then
    # Only what the machine lacks, so that no package is there twice (two versions side by side would
    # mix): a carried wheel whose distribution the machine (or its index) already has is left out.
    mapfile -t lacking < <(PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$pypath" "$python" - ".whl-$backend"/*.whl <<'PY'
import importlib.metadata as md, re, sys
for whl in sys.argv[1:]:
    name = re.sub(r"[-_.]+", "-", whl.rsplit("/", 1)[-1].split("-")[0]).lower()
    try:
        md.version(name)
    except md.PackageNotFoundError:
        print(whl)
PY
)
    if [ "${#lacking[@]}" -gt 0 ]; then
      PIP_CONFIG_FILE=/dev/null "$python" -m pip install --isolated -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$site/carried" "${lacking[@]}" \
        || { echo "run.sh: installing the carried wheels failed" >&2; exit 3; }
      pypath="$pypath:$site/carried"
    fi
    echo "run.sh: carried and installed: $(for w in "${lacking[@]}"; do basename "$w" | cut -d- -f1; done | tr '\n' ' ')"
  fi
  echo "$stamp" >"$site/stamp"
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$pypath" PYTHONUNBUFFERED=1 JAXPERF_PROGRESS=text
# An --exec's `python` and `python3` are the run's own (in a dry run, the image's stand-in, not the PATH's).
mkdir -p "$work/bin" && for name in python python3; do
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$python" >"$work/bin/$name" && chmod +x "$work/bin/$name"
done
export PATH="$work/bin:$PATH"
export MPLCONFIGDIR="$work/mpl" JAXPERF_MEASURE_IN_CHILDREN=1
# One compilation cache for every process of the run, seeded from an earlier call's (carried in .device/).
cache="$work/jaxcache"
mkdir -p "$cache"
[ -f ".device/jaxcache_$backend.tar.gz" ] && tar -xzf ".device/jaxcache_$backend.tar.gz" -C "$cache" \
  && echo "run.sh: compilation cache seeded with $(find "$cache" -type f | wc -l) entries"
export JAX_COMPILATION_CACHE_DIR="$cache" JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
read -r commit dirty < <("$python" tools/device/manifest.py check)
# The manifest is the one word on the commit: a .git left on the machine by an earlier copy names another.
export JAXPERF_GIT_COMMIT="$commit" JAXPERF_GIT_DIRTY="$dirty" GIT_DIR="$work/no-git"
echo "run.sh: commit $commit dirty=$dirty"
[ "$backend" = gpu ] && command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv

args=(--python "$python" --output-root "$work/root" --timeout 100000)
# The dry run: the device's presets (JAXPERF_PRESET) at quick sizes, on the CPU.
# What only the device has (its own compilers) is missing here: the dry run may end partial.
if [ "$dry" = 1 ]; then
  args+=(--backend cpu --quick --allow-partial); export JAXPERF_PRESET="$backend"
else
  args+=(--backend "$backend")
fi
if [ -n "$only" ]; then args+=(--only "$only"); else args+=(--all); fi
left=$(( total - ($(date +%s) - start) - 15 ))  # 15 s kept for packing
[ "$left" -gt 30 ] || { echo "run.sh: only ${left}s left after the set-up: nothing run" >&2; exit 3; }
rc=0
if [ "$only" != none ]; then
  echo "run.sh: ./run_all.sh ${args[*]} ${extra[*]} (at most ${left}s)"
  timeout --signal=TERM --kill-after=10 "$left" ./run_all.sh "${args[@]}" "${extra[@]}"
  rc=$?
  [ "$rc" = 124 ] && echo "run.sh: run_all.sh stopped after ${left}s: the notebook it was running published nothing"
fi
# What --exec commands write for the record (the tools' --json and --markdown) goes here, beside
# the notebooks' results; after each command, each file it wrote is stamped with the run's commit.
tag=$([ "$dry" = 1 ] && echo cpu || echo "$backend")
export JAXPERF_CLI_OUT="$work/root/results/$tag/cli"
[ "${#execs[@]}" -eq 0 ] || mkdir -p "$JAXPERF_CLI_OUT"
for cmd in "${execs[@]}"; do
  left=$(( total - ($(date +%s) - start) - 15 ))
  [ "$left" -gt 10 ] || { echo "run.sh: not run, no time left: $cmd"; [ "$rc" != 0 ] || rc=124; continue; }
  echo "run.sh: \$ $cmd (at most ${left}s)"
  t0=$(date +%s)
  timeout --signal=TERM --kill-after=5 "$left" bash -c "$cmd"
  code=$?
  echo "run.sh: exit $code after $(( $(date +%s) - t0 )) s: $cmd"
  "$python" tools/device/manifest.py stamp "$JAXPERF_CLI_OUT" "$cmd"
  [ "$code" = 0 ] || [ "$rc" != 0 ] || rc=$code
done

if [ -d "$work/root/results/$tag" ]; then
  tar -czf "$out/jaxperf_${backend}_results.tar.gz" -C "$work/root" "results/$tag" $( [ -d "$work/root/figures/$tag" ] && echo "figures/$tag")
  echo "run.sh: packed $(tar -tzf "$out/jaxperf_${backend}_results.tar.gz" | grep -vc '/$') files into $out/jaxperf_${backend}_results.tar.gz"
fi
# The cache comes back for the next call's carry: a call returns files of at most 16 MiB and a carry
# holds 64 MiB with the tree, so the oldest entries go past 24 MiB, and the rest in 15 MiB pieces.
while [ "$(du -sm "$cache" | cut -f1)" -gt 24 ]; do
  find "$cache" -type f -printf '%T@ %p\n' | sort -n | head -n 20 | cut -d' ' -f2- | xargs -r rm -f
done
tar -czf "$out/jaxcache_$backend.tar.gz" -C "$cache" . && echo "run.sh: compilation cache: $(find "$cache" -type f | wc -l) entries"
if [ "$(du -m "$out/jaxcache_$backend.tar.gz" | cut -f1)" -ge 15 ]; then
  split -b 15m -a 1 "$out/jaxcache_$backend.tar.gz" "$out/jaxcache_$backend.tar.gz.part-" && rm "$out/jaxcache_$backend.tar.gz"
  echo "run.sh: compilation cache in $(ls "$out"/jaxcache_"$backend".tar.gz.part-* | wc -l) pieces of at most 15 MiB"
fi
echo "run.sh: exit $rc after $(( $(date +%s) - start )) s"
exit "$rc"
