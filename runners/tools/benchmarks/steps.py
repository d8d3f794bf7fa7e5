"""`Steps`: the txl-tf contender, one model's training and evaluation steps, timed."""
import time

import keras
import tensorflow as tf
from absl import app

from runners.tools.benchmarks.configuration import (
    FLAGS, build_model, eval_lengths, strategy_and_compilation)
from runners.tools.benchmarks.evaluation_step import EvalStep
from runners.tools.benchmarks.train_step import TrainStep, profile_from_flags


class Steps:
    """The training step of one model as training runs it (`Trainer.train`, one step per call)
    and an evaluation step (one replica; compiled whole by XLA when the training step is),
    memory carried across calls.

    Args:
      config: the model configuration.
      batch_size: streams B of every step (all replicas).
      seed: seed of the weights, dropout and the random tokens.
      strategy, compilation: `strategy_and_compilation()` (default: of the flags).
    """

    def __init__(self, config, batch_size, seed=0, strategy=None, compilation=None):
        if strategy is None:
            strategy, compilation = strategy_and_compilation()
        replicas = strategy.num_replicas_in_sync
        if batch_size % replicas:
            raise app.UsageError(f"--batch_size={batch_size} is not divisible by the "
                                 f"{replicas} replicas of --strategy={FLAGS.strategy}.")
        keras.utils.set_random_seed(seed)
        with strategy.scope():
            self.config, self.model = config, build_model(config)
        self.compilation, self.jit = compilation, compilation.mode is not None
        generator = tf.random.Generator.from_seed(seed)
        self.train_step = TrainStep(self.model, strategy, compilation, generator, batch_size)
        self.trainer = self.train_step.trainer
        self.eval_q, self.eval_m = eval_lengths()
        self.eval_step = EvalStep(self.model, generator, batch_size, self.eval_q, self.eval_m,
                                  self.jit)
        self.train_step.profile = profile_from_flags()

    def train(self):
        """One training step; returns its loss."""
        return self.train_step()

    def evaluate(self):
        """One evaluation step; returns its loss."""
        return self.eval_step()

    def time_steps(self, kind, steps):
        """Seconds of each of `steps` steps of `kind` ("train" or "eval"), each waited for."""
        step = self.train if kind == "train" else self.evaluate
        seconds = []
        for _ in range(steps):
            start = time.perf_counter()
            float(step())  # waits for the result
            seconds.append(time.perf_counter() - start)
        return seconds
