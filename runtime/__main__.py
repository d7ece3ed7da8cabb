"""`python -m runtime <component> [args]`: every component of the runtime from one image."""

import sys

from runtime.cmd.dispatch import main

sys.exit(main(sys.argv[1:]))
