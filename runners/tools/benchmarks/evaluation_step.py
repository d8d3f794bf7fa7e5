"""The evaluation step: forward over a random segment [B, Q] with memory [B, M] and labels, no
dropout, one replica, compiled whole by XLA when the training step is (`segment_nll` of
txl_tf.inference.evaluation, as evaluation runs it)."""
import tensorflow as tf

from runners.tools.benchmarks.train_step import random_tokens
from txl_tf.inference.evaluation import segment_nll
from txl_tf.model.context_settings import ContextSettings


class EvalStep:
    """One evaluation step per call on one random batch, memory carried across calls.

    Args:
      model: the model.
      generator: `tf.random.Generator` of the random tokens.
      batch_size: streams B.
      tgt_len, mem_len: the segment length Q and the memory length M.
      jit: whether XLA compiles the step.
    """

    def __init__(self, model, generator, batch_size, tgt_len, mem_len, jit):
        self.batch = random_tokens(generator, batch_size, tgt_len, model.config.n_token)
        self.mems = model.init_mems(batch_size, mem_len)
        settings = ContextSettings.of_config(model.config, tgt_len=tgt_len, mem_len=mem_len)

        @tf.function(jit_compile=jit)
        def eval_step(batch, mems):
            nll_sum, count, new_mems = segment_nll(model, batch["inputs"], batch["labels"], mems,
                                                   settings)
            return nll_sum / count, new_mems
        self._step = eval_step

    def __call__(self):
        """Runs one step; returns the token-mean NLL (a scalar tensor)."""
        loss, self.mems = self._step(self.batch, self.mems)
        return loss
