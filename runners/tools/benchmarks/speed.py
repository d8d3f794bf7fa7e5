"""Speed of timed steps: seconds per step and tokens/s, median and best."""
import statistics


def speed(tokens_per_step, train_times, eval_times, eval_tokens_per_step):
    """Seconds per step and tokens/s (median and best) of the timed steps.

    Args:
      tokens_per_step: tokens of one training step (B x tgt_len).
      train_times, eval_times: seconds of each timed training and evaluation step.
      eval_tokens_per_step: tokens of one evaluation step.
    """
    train_s, eval_s = statistics.median(train_times), statistics.median(eval_times)
    return dict(train_step_s=train_s, train_tokens_per_s=tokens_per_step / train_s,
                train_step_s_all=train_times, eval_step_s=eval_s,
                eval_tokens_per_s=eval_tokens_per_step / eval_s, eval_step_s_all=eval_times,
                train_tokens_per_s_best=tokens_per_step / min(train_times),
                eval_tokens_per_s_best=eval_tokens_per_step / min(eval_times))
