"""The documented import path of `trainexec.keras.strategy` (plan a Keras task's strategy).

Example:
    ```python
    from trainexec.keras_strategy import make_strategy, plan_for
    ```
"""

from trainexec.keras.strategy import *  # noqa: F401,F403
from trainexec.keras.strategy import __all__  # noqa: F401
