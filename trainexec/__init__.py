"""trainexec: run TensorFlow training as a cluster."""

from trainexec.cluster import ClusterConfig
from trainexec.errors import ConfigError

__all__ = ["ClusterConfig", "ConfigError"]
