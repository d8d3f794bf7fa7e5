"""What a training run measures of itself and of its machine.

  step_pace        seconds per step: estimated before the first step, then measured
  duration         how long the run will take: the estimate from the model's FLOPs, then measured
  matmul_rate      a device's matmul peak (the duration estimate's and the benchmark's)
  device_memory    the accelerators' peak memory (TensorFlow's allocator)
  profile_summary  where a profile's time goes, read from the trace itself
"""
