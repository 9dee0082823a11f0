"""The cross-study answers (notebook 99): what the other notebooks published, read back and
set side by side for the README's first jax#20909 figure. It imports no study: it reads their
committed summary.json and CSV files (:mod:`.sources`), so it can only show what ran.

- :mod:`.sources`: the fori/Python ratio per source (measured, analogue, estimate, prediction);
- :mod:`.figures`: the figure; :mod:`.report`: summary.json / summary.md;
- :mod:`.settings`: notebook 99's parameters.
"""
