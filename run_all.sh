#!/usr/bin/env bash
# Regenerate the study headless, or run its tests.
#
#   ./run_all.sh [options]          run the notebooks (creates .venv on first use)
#   ./run_all.sh test [pytest args] run the tests (creates .venv on first use)
#   ./run_all.sh setup              only create/refresh .venv and the Jupyter kernel
#   ./run_all.sh lab [jupyter args] JupyterLab on the project, headless: prints the URL
#   ./run_all.sh clean              remove staging left by interrupted runs
#   ./run_all.sh compare OLD NEW    the rerun check of two existing output roots
#   ./run_all.sh render             redraw figures, summaries and README from the records
#
# `./run_all.sh --help` lists the options. The work is done by tools/run_all.py
# (stdlib only), which checks every option before any work or any write, locks
# the output root, stages each notebook and publishes it all or nothing.
# For tests only: JAXPERF_NOTEBOOKS_DIR runs the notebooks of another folder
# (tests/test_reliability.py uses trivial ones), JAXPERF_TEST_CRASH_IN_PUBLISH=N
# kills the run after N renames of a publish, JAXPERF_ENVIRONMENTS=FILE replaces
# the table of environments the notebooks need (tools/runall/envs.py).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv_py="$root/.venv/bin/python"

setup() { bash "$root/tools/setup_env.sh" || { echo "run_all.sh: environment setup failed" >&2; exit 3; }; }

# A Python >= 3.11 to check the options with, before any environment exists.
runner_python() {
  local cand
  for cand in "${JAXPERF_PYTHON:-}" "$venv_py" "${PYTHON:-}" python3.12 python3.13 python3.11 python3; do
    [ -n "$cand" ] || continue
    "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo "$cand"; return 0; }
  done
  echo "run_all.sh: no Python >= 3.11 found; set PYTHON=/path/to/python3.12" >&2
  exit 3
}

case "${1:-}" in
  test)  shift; setup; cd "$root" && exec "$venv_py" -m pytest "$@" ;;
  setup) setup; exit 0 ;;
  lab)   setup; exec "$venv_py" "$root/tools/run_all.py" "$@" ;;
esac
exec "$(runner_python)" "$root/tools/run_all.py" "$@"
