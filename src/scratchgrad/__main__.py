"""`python -m scratchgrad`: the same command line as the `scratchgrad` script."""

import sys

from scratchgrad.cli import main

sys.exit(main())
