"""run_all.sh's engine (stdlib only, Python >= 3.11): see tools/runall/."""

import sys

from runall.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
