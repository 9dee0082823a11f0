"""The engine behind run_all.sh: options, notebook selection, environments,
staging and all-or-nothing publishing, signals, JupyterLab. Stdlib only, so
it checks a run before any environment exists."""
