# The demo's Keras job with trainexec: every role, the strategy from TF_CONFIG.
import sys

import trainexec
from trainexec.examples.keras_job import build_model, eval_input_fn, train_input_fn

model_dir, max_steps = sys.argv[1], int(sys.argv[2])
trainer = trainexec.KerasTrainer(build_model, model_dir=model_dir, save_checkpoints_steps=50)
trainexec.train_and_evaluate(
    trainer, trainexec.TrainSpec(train_input_fn, max_steps=max_steps),
    trainexec.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0))
