"""A quiet start-up for the runners: TensorFlow loaded without its C++ start-up lines.

`quiet_start()` imports txl_tf, whose first act is `txl_tf.tf_start.quiet_start` (the one place
that filters those lines). The runners call it before anything imports TensorFlow.
"""


def quiet_start() -> None:
    """Imports txl_tf and with it TensorFlow, without TensorFlow's C++ start-up lines."""
    import txl_tf  # noqa: F401 - loading TensorFlow quietly is what this function is for
