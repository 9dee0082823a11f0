#!/usr/bin/env bash
# The study on a lent accelerator: the one command a device call runs. The same notebooks as
# on the CPU, executed by papermill through ./run_all.sh, with the backend changed.
#
#   bash tools/device/run.sh --backend tpu|gpu [--only LIST|--only none] [--dry-run] [--out DIR]
#                            [--python PATH] [--exec COMMAND]... [-- more ./run_all.sh options]
#
# On the machine (its own Python and JAX, no network, maybe no sockets): the Python whose JAX sees
# the device (--python P; else the GPU image's /opt/torch/.venv/bin/python3 when there, else python3
# on PATH; on a GPU the first whose JAX sees a GPU), said with why. It installs what the machine's own
# package index holds (tools/device/<backend>_index.txt, TPU only) and the wheels carried in
# .whl-<backend>/ (tools/device/fetch_wheels.sh) into folders of their own, never touching the
# machine's JAX: the pinned study packages (those jaxperf.private_api checks, less JAX: Equinox 0.13.8)
# first on PYTHONPATH, ahead of the machine's own copy; every other carried wheel only where the
# machine lacks its package, after the machine's PYTHONPATH. On a GPU the memory policy is
# XLA_PYTHON_CLIENT_PREALLOCATE=false (unless set): each process takes what it uses. Then it prints
# the machine (tools/device/machine.py: GPU, driver, clocks, the versions that import and from where,
# ptxas, loopback sockets, the thread clock's step, JAX's devices) into run.log and $OUT/machine.json,
# and runs ./run_all.sh --backend B --python P --all (or --only LIST) into an output root of its own.
# Papermill runs each notebook's cells in its own process where no socket can be opened (run_all.sh's
# in-process engine). One process holds the device at a time: notebooks run one after another, every
# measurement in fresh processes one after another, and the notebook's own process never opens it.
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
# JAXPERF_IMAGE_PYTHON replaces /opt/torch/.venv/bin/python3 as the image's Python (tests).
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
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
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

# The GPU's memory, set before any process opens it: each takes what it uses (XLA's default is 75% of
# the GPU for the first process), so a process that opens it after another closed it finds it whole.
if [ "$backend" = gpu ]; then
  export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"
  echo "run.sh: GPU memory: XLA_PYTHON_CLIENT_PREALLOCATE=$XLA_PYTHON_CLIENT_PREALLOCATE" \
    "XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-(unset)}; one process holds the GPU at a" \
    "time (notebooks one after another, each measurement in fresh processes one after another)"
fi
# The Python whose JAX sees the device: --python, or the image's, or python3 on PATH (dry run: the
# image's stand-in). On a GPU each candidate is asked, in a process that exits, which backend its JAX opens.
image_python="${JAXPERF_IMAGE_PYTHON:-/opt/torch/.venv/bin/python3}"
if [ -n "$python" ]; then candidates=("$python"); why="--python"
elif [ "$dry" = 1 ]; then candidates=("$root/.envs/image-$backend/bin/python"); why="the dry run's stand-in for the $backend image"
else candidates=("$image_python" "$(command -v python3 || echo python3)"); why=""
fi
python=""
for cand in "${candidates[@]}"; do
  [ -x "$cand" ] || { echo "run.sh: not a Python here: $cand"; continue; }
  if [ "$backend" = gpu ] && [ "$dry" = 0 ]; then
    seen="$(timeout 180 "$cand" -c 'import jax; print(jax.default_backend())' 2>/dev/null | tail -n 1)"
    [ "$seen" = gpu ] || { echo "run.sh: $cand: its JAX opens '${seen:-nothing (no working jax)}', not the GPU"; continue; }
    why="${why:-$([ "$cand" = "$image_python" ] && echo "the image's Python" || echo "python3 on PATH")}: its JAX sees the GPU"
  elif [ -z "$why" ]; then
    why="$([ "$cand" = "$image_python" ] && echo "the image's Python" || echo "python3 on PATH, no $image_python")"
  fi
  python="$cand"; break
done
[ -n "$python" ] || { echo "run.sh: no Python to run (tried: ${candidates[*]}; dry run: bash tools/make_alt_env.sh image-$backend; else --python)" >&2; exit 3; }
"$python" -c 'import sys, jax, jaxlib; print("run.sh: python", sys.version.split()[0], "jax", jax.__version__, "jaxlib", jaxlib.__version__)' \
  || { echo "run.sh: $python has no working jax" >&2; exit 3; }
echo "run.sh: chose $python ($why)"

# What the machine's own index holds (TPU), then the carried wheels, each in a folder of its own; the
# machine's JAX stack is never installed. The pinned study packages go first on PYTHONPATH (the
# machine may have another Equinox); the rest only where the machine lacks the package, after the
# machine's own PYTHONPATH (no package twice). A warm machine keeps /tmp between calls: the folders
# are reused while the Python, the lists and the wheels are the same.
site="${TMPDIR:-/tmp}/jaxperf_device_site"
index="tools/device/${backend}_index.txt"
stamp="$( { echo "$python $dry"; cat "$index" 2>/dev/null; ls ".whl-$backend" 2>/dev/null; } | sha1sum | cut -c1-16)"
pypath="$root/lib" pinned=""
if [ -f "$site/stamp" ] && [ "$(cat "$site/stamp")" = "$stamp" ]; then
  for sub in index carried; do [ -d "$site/$sub" ] && pypath="$pypath:$site/$sub"; done
  [ -d "$site/pinned" ] && pinned="$site/pinned"
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
    # pinned: the packages jaxperf.private_api checks (its CHECKED), less the machine's JAX stack;
    # lacking: every other carried wheel whose distribution the machine (or its index) does not have.
    # "GROUP WHEEL NAME [THE MACHINE'S VERSION]" per wheel
    sorted_wheels="$(PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$pypath" "$python" - lib/jaxperf/private_api.py ".whl-$backend"/*.whl <<'PY'
import ast, importlib.metadata as md, re, sys
tree = ast.parse(open(sys.argv[1]).read())
checked = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.AnnAssign) and n.target.id == "CHECKED")
never = re.compile(r"^(jax|jaxlib|jax-.*|libtpu.*|triton|nvidia-.*|numpy|scipy|ml-dtypes|opt-einsum)$")
for whl in sys.argv[2:]:
    file = whl.rsplit("/", 1)[-1]
    name = re.sub(r"[-_.]+", "-", file.split("-")[0]).lower()
    if never.match(name):
        print("never", whl, name)
    elif name in checked:
        print("pinned", whl, file.rsplit("-", 3)[0])
    else:
        try:
            print("has", whl, name, md.version(name))
        except md.PackageNotFoundError:
            print("lacking", whl, name)
PY
)" || { echo "run.sh: sorting the carried wheels failed" >&2; exit 3; }
    for group in pinned lacking; do
      mapfile -t wheels < <(awk -v g="$group" '$1 == g {print $2}' <<<"$sorted_wheels")
      [ "${#wheels[@]}" -gt 0 ] || continue
      folder="$site/$([ "$group" = pinned ] && echo pinned || echo carried)"
      PIP_CONFIG_FILE=/dev/null "$python" -m pip install --isolated -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$folder" "${wheels[@]}" \
        || { echo "run.sh: installing the carried wheels ($group) failed" >&2; exit 3; }
      if [ "$group" = pinned ]; then pinned="$folder"; else pypath="$pypath:$folder"; fi
    done
    said() { awk -v g="$1" '$1 == g {printf "%s%s ", $3, ($4 == "" ? "" : " (the machine has " $4 ")")}' <<<"$sorted_wheels"; }
    echo "run.sh: pinned, first on PYTHONPATH: $(said pinned)"
    echo "run.sh: carried and installed: $(said lacking)"
    echo "run.sh: left out, the machine has them: $(said has)"
    [ -z "$(said never)" ] || echo "run.sh: never installed (the machine's JAX stack): $(said never)"
  fi
  echo "$stamp" >"$site/stamp"
fi
# Pinned study packages first, then the machine's own PYTHONPATH (the TPU's JAX is there), the project,
# what the machine lacked; the machine's site-packages after all of them.
export PYTHONPATH="${pinned:+$pinned:}${PYTHONPATH:+$PYTHONPATH:}$pypath" PYTHONUNBUFFERED=1 JAXPERF_PROGRESS=text
echo "run.sh: PYTHONPATH, in order: $PYTHONPATH; then $python's own site-packages"
# No network there: pip fails at once rather than retry (notebook 11 then says Flax's sources are not carried).
[ "$dry" = 1 ] || export PIP_NO_INDEX=1
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
# The machine, before anything runs (GPU, driver, clocks, the versions that import and from where,
# ptxas, loopback sockets, the thread clock's step, JAX's devices): in run.log and $OUT/machine.json.
timeout 240 "$python" tools/device/machine.py "$out/machine.json" || echo "run.sh: tools/device/machine.py failed (exit $?)"

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
# A GPU dry run lowers every kernel the GPU preset plans for CUDA (and compiles what this machine
# can), so that the device's code paths are tried before device time is spent (issue 62).
if [ "$dry" = 1 ] && [ "$backend" = gpu ]; then
  mkdir -p "$JAXPERF_CLI_OUT"
  "$python" tools/gpu_lowering.py --json "$JAXPERF_CLI_OUT/gpu_lowering.json" || rc=$?
fi
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
