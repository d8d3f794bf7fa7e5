"""The training step train.py runs, on random tokens: `Trainer.train` of
txl_tf.training.trainer over a segment [B, Q] with memory [B, M] (token-mean NLL, all-reduced
gradients, global-norm clip, the training optimizer and learning-rate schedule, gradient
accumulation, the new memory carried to the next step), compiled as training compiles it."""
import tensorflow as tf
from absl import app

from runners.tools.benchmarks.configuration import FLAGS
from txl_tf.commands.train_options import TrainError, profile_range
from txl_tf.training.lr_schedule import WarmupCosineSchedule
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.actions.profile_steps import ProfileSteps
from txl_tf.training.trainer import Trainer
from txl_tf.training.step_settings import StepSettings


def random_tokens(generator, batch_size, length, n_token):
    """{"inputs", "labels"} int32 [B, length]: a random segment and its next tokens."""
    tokens = generator.uniform([batch_size, length + 1], 0, n_token, tf.int32)
    return {"inputs": tokens[:, :-1], "labels": tokens[:, 1:]}


def profile_from_flags():
    """`--profile_steps`: the benchmark's training steps (warm-up included, from 1) profiled
    into --model_dir/plugins/profile/, as train.py does; None without it."""
    if not FLAGS.profile_steps or FLAGS.child:
        return None
    total = FLAGS.bench_warmup + FLAGS.rounds * FLAGS.steps
    try:
        start, end = profile_range(FLAGS.profile_steps, total)
    except TrainError as error:
        raise app.UsageError(str(error).replace("--train_steps", "the benchmark's training "
                                                "steps (--bench_warmup + --rounds x --steps)"))
    return ProfileSteps(FLAGS.model_dir, start, end)


def make_trainer(model, strategy, compilation):
    """The `Trainer` of train.py's flags: its optimizer, schedule, clip, accumulation and
    compilation."""
    warmup = min(FLAGS.warmup_steps, FLAGS.train_steps)
    schedule = WarmupCosineSchedule(FLAGS.learning_rate, warmup, FLAGS.train_steps,
                                    FLAGS.min_lr_ratio)
    with strategy.scope():
        optimizer = make_optimizer(schedule)
    return Trainer(model, optimizer, strategy,
                   StepSettings(clip=FLAGS.clip, grad_accum_steps=FLAGS.grad_accum_steps,
                                loss_scaling=FLAGS.precision == "mixed_float16",
                                jit_compile=compilation.mode is not None))


class TrainStep:
    """One training step per call on one random batch repeated, memory carried across calls.

    Args:
      model: the model (built under `strategy`'s scope).
      strategy, compilation: `configuration.strategy_and_compilation()`.
      generator: `tf.random.Generator` of the random tokens.
      batch_size: streams B of every step (all replicas).
    """

    def __init__(self, model, strategy, compilation, generator, batch_size):
        self.trainer = make_trainer(model, strategy, compilation)
        config = model.config
        batch = random_tokens(generator, batch_size, config.tgt_len, config.n_token)
        dataset = tf.data.Dataset.from_tensors(batch).repeat()
        self.batches = iter(strategy.experimental_distribute_dataset(dataset))
        self.mems = self.trainer.init_memory(batch_size // strategy.num_replicas_in_sync)
        self.count, self.profile = 0, None

    def __call__(self):
        """Runs one step (profiled when `self.profile` covers it); returns the loss."""
        self.count += 1
        if self.profile and self.count == self.profile.start:
            self.profile.begin(self.profile.start - 1)
        self.mems, stats = self.trainer.train(self.batches, self.mems, 1)
        if self.profile and self.count == self.profile.end:
            self.profile.close()
            print(f"profile of training steps {self.profile.start}-{self.profile.end} in "
                  f"{FLAGS.model_dir}/plugins/profile/", flush=True)
        return float(stats.loss)
