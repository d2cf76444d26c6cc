"""Where `trainexec.cluster.keepalive` was first: its names, re-exported so that an import
of this module keeps working (Keras's ParameterServerStrategy tasks were its only users;
an Estimator job with parameter servers uses it too now)."""

from trainexec.cluster.keepalive import (DEFAULT_KEEPALIVE_SECS, OPTIONS, OPTIONS_VAR,
                                         SETTING_VAR, apply_keepalive, keepalive_options,
                                         keepalive_secs)

__all__ = ["DEFAULT_KEEPALIVE_SECS", "OPTIONS", "OPTIONS_VAR", "SETTING_VAR", "apply_keepalive",
           "keepalive_options", "keepalive_secs"]
