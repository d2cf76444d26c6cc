"""Exceptions trainexec raises for bad input."""

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration value (TF_CONFIG, a spec, an option) is malformed.

    The message names the field, shows the bad value and says what is expected.
    """
