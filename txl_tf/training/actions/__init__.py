"""The periodic actions of a training run, fired by `Controller` after each compiled loop; one
action per file, and `factory.build_actions`, which builds a run's set.

Each action is called after every loop with its `LoopOutput` and acts when its interval ends
(`every` steps) or at the last step of the run:
  `Throughput`     tokens per second without the first loop (tracing), for the summary;
  `LogProgress`    console line and TensorBoard training scalars (loss, bpc/ppl, learning_rate,
                   grad_norm, tokens_per_sec) over the steps since the last line, and the ETA
                   at the run's `StepPace`; also where a loop ends after the heartbeat's
                   silence (`txl_tf/training/reporting/heartbeat.py`);
  `MeasuredDuration` once, when the first loop after compilation ends: the duration line
                   with the measured seconds per step in place of the estimate;
  `Evaluate`       validation loss: TensorBoard scalars and a console line (and
                   `output.valid_loss` for the actions after it);
  `SaveCheckpoint` training checkpoint with every worker's memory (and `output.saved`);
  `KeepBest`       after a save at an evaluated step: model_dir/best/ when the validation loss
                   is the best so far (its own record of the best, kept in best/best.json);
  `HParamsMetrics` the losses just logged or validated as the metrics of the run's session of
                   TensorBoard's HPARAMS dashboard (`txl_tf/training/reporting/hparams_session.py`).
  `ProfileSteps`   a TensorBoard profile of steps START..END (`--profile_steps`), chief only.

A new action is a file here with a class whose `__call__(output: LoopOutput)` acts (and an
`every` attribute, 0 when it has no interval of its own), and its place in `build_actions`.
"""
from txl_tf.training.actions.hparams_metrics import HParamsMetrics
from txl_tf.training.actions.keep_best import KeepBest
from txl_tf.training.actions.log_progress import LogProgress
from txl_tf.training.actions.measured_duration import MeasuredDuration
from txl_tf.training.actions.profile_steps import ProfileSteps
from txl_tf.training.actions.save_checkpoint import SaveCheckpoint
from txl_tf.training.actions.throughput import Throughput
from txl_tf.training.actions.validation import Evaluate

__all__ = ["Evaluate", "HParamsMetrics", "KeepBest", "LogProgress", "MeasuredDuration",
           "ProfileSteps", "SaveCheckpoint", "Throughput"]
