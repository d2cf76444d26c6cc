"""What each task of a job does, in order, for every trainer.

* `serving`: serve until training is over (an Estimator's ps, a Keras ParameterServerStrategy
  worker or ps).
"""
