"""`python -m trainexec` runs the `trainexec` command."""

import sys

from trainexec.cli import main

sys.exit(main())
