"""``python -m trainexec.testing.gcs``: the emulator process (`server.main`)."""

import sys

from trainexec.testing.gcs.server import main

sys.exit(main())
