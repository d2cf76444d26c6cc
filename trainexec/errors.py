"""Exceptions trainexec raises: for bad input, and for a lost peer."""

__all__ = ["ConfigError", "PeerLostError"]


class ConfigError(ValueError):
    """A configuration value (TF_CONFIG, a spec, an option) is malformed.

    The message names the field, shows the bad value and says what is expected.
    """


class PeerLostError(RuntimeError):
    """A peer task this one trains with is gone, and this task cannot go on without it
    (a MultiWorkerMirroredStrategy group: every task runs every step). In a cluster the
    task exits with the lost-peer code, so the group restarts together."""
