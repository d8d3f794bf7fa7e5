"""`TrainError`: inconsistent training options, raised by the run's parts (placement, run
record, warm start) and by `txl_tf/commands/train_options.py`; TensorFlow-free."""


class TrainError(ValueError):
    """Inconsistent training options; the message names the fix."""
