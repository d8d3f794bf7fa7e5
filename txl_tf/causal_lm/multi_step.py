"""`multi_step_function`: `steps_per_execution` steps of `fit` / `evaluate` in one `tf.function`.

Keras' own loop runs each step inside a `tf.cond`, whose inputs MirroredStrategy's replica
threads cannot be fed; here every step runs in the body of a `tf.while_loop` whose condition is
that the next element exists (read one step ahead, as Keras does).

Example (what `TransformerXLCausalLM.make_train_function` does):
  >>> train_function = multi_step_function(strategy, model.train_step, steps=32)
  >>> logs = train_function(iterator)       # up to 32 steps; the last step's logs
"""
import tensorflow as tf


def multi_step_function(strategy, step_function, steps: int):
    """Up to `steps` steps in one `tf.function`, fewer at the end of the data.

    Args:
      strategy: the model's distribution strategy; each step runs `step_function` on every
        replica (`strategy.run`).
      step_function: one replica's step, `data -> logs` (the same all-reduced logs on every
        replica).
      steps: the most steps of one call.

    Returns:
      `function(iterator) -> logs`, the logs of the last step; an iterator with no element at
      all raises OutOfRangeError, which ends Keras' epoch.
    """
    def one_step(data):
        logs = strategy.run(step_function, args=(data,))
        # every replica returns the same (all-reduced) logs
        return tf.nest.map_structure(lambda v: strategy.experimental_local_results(v)[0], logs)

    @tf.function(reduce_retracing=True)
    def multi_step(iterator):
        logs = one_step(next(iterator))

        def more(i, element, logs):
            return tf.logical_and(i < steps, element.has_value())

        def step(i, element, logs):
            logs = one_step(element.get_value())
            element = tf.cond(i + 1 < steps, iterator.get_next_as_optional, lambda: element)
            return i + 1, element, logs

        _, _, logs = tf.while_loop(more, step,
                                   (tf.constant(1), iterator.get_next_as_optional(), logs))
        return logs

    return multi_step
