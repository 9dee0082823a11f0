#!/usr/bin/env bash
# Create (or reuse) the project's .venv from Python >= 3.12, install the
# package with its exact locked versions, register the Jupyter kernel "jaxperf",
# and set up the habits of the working tree:
#   - the nbstripout git filter (.gitattributes names notebooks/*.ipynb), so a
#     source notebook's outputs and run metadata never reach git;
#   - JupyterLab without autosave (the project's lab settings), so running a
#     notebook with edited parameters does not rewrite the committed source;
#   - Debian's chromium for the browser test, when missing and apt can install it.
# Safe to rerun: a venv whose install stamp matches pyproject.toml, the lock and
# the extras is reused; the other steps are quick and idempotent.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
lock="$root/requirements.lock"
# Extras from pyproject.toml: "triton" (default: compiles Pallas kernels for NVIDIA
# targets on a CPU), "tpu" (default: libtpu compiles for TPU v3-v6e on a CPU),
# "gpu" (jax[cuda13]); comma-separated. JAXPERF_EXTRAS= (empty) installs none of
# these. "study" (Jupyter, papermill, the plotting stack) and "dev" (tests, lint, types,
# hooks) are always installed: the package alone (`pip install jaxperf`) is the core only.
extras="${JAXPERF_EXTRAS-triton,tpu}"
all_extras="dev,study${extras:+,$extras}"

find_python() {
  local cand
  for cand in "${PYTHON:-}" python3.12 python3.13 python3; do
    [ -n "$cand" ] || continue
    if "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$cand"; return 0
    fi
  done
  # pyenv installs versions that its shims only expose when selected.
  if command -v pyenv >/dev/null 2>&1; then
    for cand in "$(pyenv root)"/versions/3.1[2-9]*/bin/python3; do
      [ -x "$cand" ] && { echo "$cand"; return 0; }
    done
  fi
  return 1
}

install_venv() {
  local py log spec tag constraints=()
  py="$(find_python)" || {
    echo "setup: JAX 0.12 needs Python >= 3.12; none found. Set PYTHON=/path/to/python3.12." >&2
    exit 1
  }
  if [ -x "$venv/bin/python" ]; then
    echo "setup: updating $venv (pyproject.toml, the lock or extras changed)" >&2
  else
    echo "setup: creating $venv with $py ($("$py" --version)), extras: $all_extras" >&2
    "$py" -m venv "$venv"
  fi
  # The lock holds exact versions for the platform it was made on (its header says
  # which); elsewhere pip resolves pyproject.toml's ranges.
  tag="$("$venv/bin/python" -c 'import platform, sys; print(f"python{sys.version_info.major}.{sys.version_info.minor}-{sys.platform}-{platform.machine()}")')"
  if [ -f "$lock" ] && grep -qx "# platform: $tag" "$lock"; then
    constraints=(-c "$lock")
  else
    echo "setup: requirements.lock is for $(sed -n 's/^# platform: //p' "$lock" 2>/dev/null), not $tag: installing from pyproject.toml's ranges" >&2
  fi
  # pip's own chatter (and this machine's warnings about missing local indexes) go to a log.
  log="$venv/.jaxperf-install.log"
  spec="$root[$all_extras]"
  if ! { "$venv/bin/python" -m pip install -q --upgrade pip \
      && "$venv/bin/python" -m pip install -q "${constraints[@]}" -e "$spec"; } >"$log" 2>&1; then
    grep -v "^WARNING: Location" "$log" | tail -20 >&2
    echo "setup: pip install failed (full log: $log)" >&2
    exit 1
  fi
  "$venv/bin/python" -m ipykernel install --prefix "$venv" --name jaxperf \
    --display-name "Python (jaxperf)" >/dev/null
  echo "setup: done ($("$venv/bin/python" -c 'import jax, equinox; print("jax", jax.__version__, "equinox", equinox.__version__)'))" >&2
}

# Strip outputs, counts, widget state and machine-specific language_info from
# notebooks/*.ipynb as git reads them (cell ids and the kernelspec stay), so the
# committed source stays as written after a user runs it. Executed notebooks
# under results/ keep their outputs: .gitattributes names notebooks/ only.
install_git_filter() {
  git -C "$root" rev-parse --git-dir >/dev/null 2>&1 || return 0
  local keys strip="'$venv/bin/nbstripout' --keep-id"
  keys="metadata.papermill cell.metadata.papermill"
  for k in version codemirror_mode file_extension mimetype nbconvert_exporter pygments_lexer; do
    keys="$keys metadata.language_info.$k"
  done
  # nbstripout reads its extra keys from here, in the filter and in the pre-commit hook alike.
  git -C "$root" config filter.nbstripout.extrakeys "$keys"
  git -C "$root" config filter.nbstripout.clean "$strip"
  git -C "$root" config filter.nbstripout.smudge cat
  git -C "$root" config diff.ipynb.textconv "$strip -t"
}

# JupyterLab settings for this venv's lab: no autosave (save on purpose, Ctrl+S), and
# no news or update checks (nothing fetched, no pop-up over the notebook).
install_lab_settings() {
  local dir="$venv/share/jupyter/lab/settings"
  mkdir -p "$dir"
  cat > "$dir/overrides.json" <<'JSON'
{
  "@jupyterlab/docmanager-extension:plugin": {"autosave": false},
  "@jupyterlab/apputils-extension:notification": {"checkForUpdates": false, "fetchNews": "false"}
}
JSON
}

# The browser test drives Debian's chromium (Playwright cannot download a browser
# here). JAXPERF_BROWSER=0 skips this; without root or apt the test skips and says why.
install_browser() {
  [ "${JAXPERF_BROWSER:-1}" != 0 ] || return 0
  command -v chromium >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium (apt) for the browser test" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
      >"$venv/.jaxperf-apt.log" 2>&1 \
      || echo "setup: could not install chromium (log: $venv/.jaxperf-apt.log); the browser test will skip" >&2
  else
    echo "setup: chromium not found; install it (apt-get install chromium) to run the browser test" >&2
  fi
}

stamp_value="$(cat "$root/pyproject.toml" "$lock" 2>/dev/null; echo "extras=$all_extras")"
stamp_file="$venv/.jaxperf-install-stamp"
if ! { [ -x "$venv/bin/python" ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp_value" ]; }; then
  install_venv
  printf '%s' "$stamp_value" > "$stamp_file"
fi
install_git_filter
install_lab_settings
install_browser
