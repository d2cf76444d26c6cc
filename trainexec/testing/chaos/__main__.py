"""`python -m trainexec.testing.chaos`: see `trainexec.testing.chaos.cli`."""

import sys

from trainexec.testing.chaos.cli import main

sys.exit(main())
