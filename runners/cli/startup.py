"""A quiet start-up for the runners: TensorFlow loaded without its C++ start-up lines.

`quiet_start()` is `txl_tf.runtime.tf_start.quiet_start` (the one place that filters those lines).
The runners call it in `main`, after their checks of the flags, before anything imports TensorFlow.
"""
from txl_tf.runtime.tf_start import quiet_start  # noqa: F401
