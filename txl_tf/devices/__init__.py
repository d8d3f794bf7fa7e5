"""Which devices a run uses and how its steps are compiled for them: the choices that training,
evaluation, generation and export share, below all of them.

  choices           the values of the named choices (`--strategy`, `--jit_compile`) and
                    `JitCompile`, the one parse of `--jit_compile`, TensorFlow-free so that
                    options and flags can check them before it loads
  step_compilation  the device facts (`strategy_devices`, `device_type`, `is_tpu`) and the
                    `--jit_compile` decision of a training step (`choose`) and of generation
                    (`choose_generation`), each with the line that says what was chosen and why

Nothing here imports another folder of txl_tf/ (tests/repository/test_package_boundaries.py).
"""
