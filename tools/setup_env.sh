#!/usr/bin/env bash
# Create (or reuse) the project's .venv from Python >= 3.12, install the
# package with its pinned versions, and register the Jupyter kernel "jaxperf".
# Safe to rerun: a venv whose install stamp matches pyproject.toml is reused.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
# Extras from pyproject.toml: "triton" (default: compiles Pallas kernels for NVIDIA
# targets on a CPU), "gpu" (jax[cuda13]), "tpu" (jax[tpu]); comma-separated.
# JAXPERF_EXTRAS= (empty) installs none.
extras="${JAXPERF_EXTRAS-triton,tpu}"

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

stamp_value="$(cat "$root/pyproject.toml"; echo "extras=$extras")"
stamp_file="$venv/.jaxperf-install-stamp"
if [ -x "$venv/bin/python" ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp_value" ]; then
  exit 0
fi

py="$(find_python)" || {
  echo "setup: JAX 0.12 needs Python >= 3.12; none found. Set PYTHON=/path/to/python3.12." >&2
  exit 1
}
if [ -x "$venv/bin/python" ]; then
  echo "setup: updating $venv (pyproject.toml or extras changed)" >&2
else
  echo "setup: creating $venv with $py ($("$py" --version)), extras: ${extras:-none}" >&2
  "$py" -m venv "$venv"
fi
# pip's own chatter (and this machine's warnings about missing local indexes) go to a log.
log="$venv/.jaxperf-install.log"
spec="$root"
[ -n "$extras" ] && spec="$root[$extras]"
if ! { "$venv/bin/python" -m pip install -q --upgrade pip && "$venv/bin/python" -m pip install -q -e "$spec"; } >"$log" 2>&1; then
  grep -v "^WARNING: Location" "$log" | tail -20 >&2
  echo "setup: pip install failed (full log: $log)" >&2
  exit 1
fi
"$venv/bin/python" -m ipykernel install --prefix "$venv" --name jaxperf \
  --display-name "Python (jaxperf)" >/dev/null
printf '%s' "$stamp_value" > "$stamp_file"
echo "setup: done ($("$venv/bin/python" -c 'import jax, equinox; print("jax", jax.__version__, "equinox", equinox.__version__)'))" >&2
