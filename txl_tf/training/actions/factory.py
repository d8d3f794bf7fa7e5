"""`build_actions`: the actions of a training run, in the order the controller fires them."""
from typing import Optional

from txl_tf.training.actions.hparams_metrics import HParamsMetrics
from txl_tf.training.actions.keep_best import KeepBest
from txl_tf.training.actions.log_progress import LogProgress
from txl_tf.training.actions.measured_duration import MeasuredDuration
from txl_tf.training.actions.profile_steps import ProfileSteps
from txl_tf.training.actions.save_checkpoint import SaveCheckpoint
from txl_tf.training.actions.throughput import Throughput
from txl_tf.training.actions.validation import Evaluate
from txl_tf.training.checkpoints.worker_memory import gather_worker_memory
from txl_tf.training.reporting.heartbeat import Heartbeat
from txl_tf.training.lr_schedule import schedule_flags, warmup_cosine_lr
from txl_tf.training.reporting.tensorboard import RunSummaries
from txl_tf.training.training_run import TrainingRun


def build_actions(run: TrainingRun, summaries: RunSummaries, heartbeat: Heartbeat, step: int,
                  valid_baseline: Optional[float] = None) -> dict:
    """The actions of `run` (its trainer, checkpoints, data and hparams session built), by name.

    Args:
      run: the run; its options give the intervals (log, eval, save steps), its place says
        whether this worker echoes lines and profiles.
      summaries: the run's TensorBoard writers.
      heartbeat: the run's `Heartbeat` (its pace feeds the ETA and the measured duration).
      step: the step the run starts from (a profiler window is begun there).
      valid_baseline: the valid split's unigram entropy (nats), shown on the valid lines.

    Returns:
      {name: action} in firing order: (profile: chief only, first, so that it stops before
      the others act), throughput, log, duration, evaluation, save, best, hparams.
    """
    o, place, strategy, trainer = run.options, run.place, run.strategy, run.trainer
    valid_fn = run.data.input_fn("valid", run.layouts["valid"], repeat=False)

    def evaluate():
        iterator = iter(strategy.distribute_datasets_from_function(valid_fn))
        return trainer.evaluate(iterator, place.valid_per_replica, o.max_eval_batches)

    def memories(mems):  # [] -> a resumed run restarts from zeros
        if not o.checkpoint_memory:
            return []
        return gather_worker_memory(strategy, mems, place.num_workers,
                                    trainer.memory_to_host(mems))

    log = LogProgress(summaries, o.log_steps, o.train_steps, echo=place.is_chief,
                      heartbeat=heartbeat,
                      learning_rate=lambda i: warmup_cosine_lr(i, **schedule_flags(o)))
    evaluation = Evaluate(evaluate, summaries, o.eval_steps, o.train_steps,
                          echo=place.is_chief, baseline=valid_baseline)
    actions = dict(throughput=Throughput(), log=log,
                   duration=MeasuredDuration(heartbeat.pace, o.train_steps,
                                             echo=place.is_chief),
                   evaluation=evaluation,
                   save=SaveCheckpoint(run.checkpoints, o.save_steps, o.train_steps, memories),
                   best=KeepBest(run.checkpoints.best, run.data.level, run.data.copy_to),
                   hparams=HParamsMetrics(run.hparams, log, evaluation))
    if o.profile_steps and place.is_chief:
        actions = dict(profile=ProfileSteps(o.model_dir, *o.profile_steps), **actions)
        actions["profile"].begin(step)
    return actions
