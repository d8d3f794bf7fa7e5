"""The values of a training run's named choices, TensorFlow-free so that options and flags can
check them before TensorFlow loads.

  STRATEGIES: `--strategy`, made by `txl_tf/training/distribute.py: create_strategy`.
  JIT_COMPILE: `--jit_compile`, resolved by `txl_tf/devices/step_compilation.py: choose`.
"""
STRATEGIES = ("auto", "default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
JIT_COMPILE = ("auto", "true", "false")
