"""The documented import path of the Keras exporters (`trainexec.keras.exporters`).

Example::

    from trainexec.exporters import BestExporter, FinalExporter, LatestExporter
"""

from trainexec.keras.exporters import *  # noqa: F401,F403
from trainexec.keras.exporters import __all__  # noqa: F401
