"""`--jit_compile`: whether XLA compiles the training step, and which part of it; and whether
it compiles generation's whole sampling loop (`choose_generation`).

Three ways the replica step (`txl_tf.training.replica_step.ReplicaStep`) runs:

  * `whole`: the replica step (forward, backward, gradient accumulation, all-reduce, clip, loss
    scaling, Adam) is one `tf.function(jit_compile=True)`. The default strategy and
    `one_device`.
  * `gradients`: MirroredStrategy / MultiWorkerMirroredStrategy, on GPUs and CPUs alike. The
    step writes variables of aggregation ONLY_FIRST_REPLICA (Keras' `optimizer.iterations`, the
    loss scale and its count), and TensorFlow writes those through `merge_call` in a replica
    context, inside an XLA context too (all-GPU devices spare only the cross-replica sums), so
    the whole step cannot be one XLA function there ("`merge_call` called while defining a new
    graph"). XLA compiles each replica's forward, backward and gradient accumulation (almost
    all of the FLOPs), and the all-reduce, clip and Adam run as TensorFlow ops.
  * `tpu`: TPUStrategy compiles the function given to `strategy.run` itself, whatever
    `--jit_compile` says.

`--jit_compile=auto` chooses per device and precision (`choose`); one line of the run says what
and why. The rule comes from measurements on CPU (docs/performance.md#whole-step-xla-in-training):
in float32 the compiled step is faster; in mixed_bfloat16 it is several times slower, with or
without `--xla_fusion`, as XLA:CPU's own kernels run the bfloat16 matrix products (not oneDNN's
AVX512_BF16 ones), so there TensorFlow's kernels (and `--xla_fusion`'s element-wise clusters)
run the step.
"""
from typing import NamedTuple

import tensorflow as tf

from txl_tf.devices.choices import JitCompile


class Choice(NamedTuple):
    """What the training step runs with: `mode` (None: no XLA, or `whole`, `gradients`, `tpu`)
    and the reason in words."""
    mode: object
    reason: str

    @property
    def line(self) -> str:
        """The run's one line about it."""
        what = {None: "off (TensorFlow's kernels run the training step)",
                "whole": "on (the whole replica training step is compiled by XLA)",
                "gradients": "on for each replica's forward, backward and gradient "
                             "accumulation (compiled by XLA); the all-reduce, clip and Adam run "
                             "as TensorFlow ops (this strategy updates the optimizer's step "
                             "count through merge_call, which XLA cannot compile)",
                "tpu": "on (TPUStrategy compiles the training step)"}[self.mode]
        return f"jit_compile: {what}; {self.reason}"


def is_tpu(strategy: tf.distribute.Strategy) -> bool:
    return isinstance(strategy, (tf.distribute.TPUStrategy,
                                 tf.distribute.experimental.TPUStrategy))


def strategy_devices(strategy: tf.distribute.Strategy) -> list:
    """Device names of this process's replicas ('/CPU:0' for the default strategy)."""
    try:
        return list(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy
        return [tf.config.list_logical_devices("GPU")[0].name
                if tf.config.list_logical_devices("GPU") else "/CPU:0"]


def device_type(name: str) -> str:
    """"CPU", "GPU" or "TPU" of a device name such as "/job:localhost/device:GPU:0"."""
    return str(tf.DeviceSpec.from_string(name).device_type or "CPU").upper()


def compiled_mode(strategy: tf.distribute.Strategy) -> str:
    """How XLA compiles the step under `strategy` when it does (see the module docstring)."""
    if is_tpu(strategy):
        return "tpu"
    if isinstance(strategy, (tf.distribute.MirroredStrategy,
                             tf.distribute.MultiWorkerMirroredStrategy)):
        return "gradients"
    return "whole"


def autoclustering_on() -> bool:
    """Whether `--xla_fusion` (XLA auto-clustering, `xla_clustering.py`) is on in this process."""
    return tf.config.optimizer.get_jit() == "autoclustering"


def choose(setting, strategy: tf.distribute.Strategy, precision: str) -> Choice:
    """The step's compilation for `--jit_compile=setting` ('auto', 'true', 'false' or a
    `JitCompile`; a bad one: ValueError).

    auto: TPU always (TPUStrategy compiles); GPU on; CPU on, except in mixed_bfloat16, where
    XLA:CPU's bfloat16 matmuls are slower than oneDNN's.
    """
    setting = JitCompile.parse(setting).setting
    mode = compiled_mode(strategy)
    if mode == "tpu":
        return Choice("tpu", f"--jit_compile={setting}: a TPU always compiles")
    if setting != "auto":
        return Choice(mode if setting == "true" else None, f"--jit_compile={setting}")
    devices = {device_type(d) for d in strategy_devices(strategy)}
    if "GPU" in devices:
        return Choice(mode, "--jit_compile=auto: GPU")
    if precision == "mixed_bfloat16":
        fusion = ("--xla_fusion fuses the element-wise ops, " if autoclustering_on()
                  else "--xla_fusion would fuse the element-wise ops; ")
        return Choice(None, "--jit_compile=auto: CPU mixed_bfloat16 (oneDNN runs the bfloat16 "
                            f"matmuls faster than XLA; {fusion}--jit_compile=true compiles "
                            "the whole step)")
    return Choice(mode, f"--jit_compile=auto: CPU {precision}; --jit_compile=false to run "
                        "TensorFlow's kernels")


def choose_generation(setting, flag: str = "--jit_compile") -> Choice:
    """Whether generation runs as one XLA program (`Generator(jit_compile=...)`,
    `txl_tf/generation/generator.py`): mode "whole" or None.

    Args:
      setting: 'auto', 'true', 'false' (`--jit_compile`), a bool or a `JitCompile`.
      flag: the flag a bad setting's error names (export's is `--gen_jit_compile`).

    auto: on where shapes must be static or kernel launches dominate (TPU, GPU); off on CPU,
    where the graph loop with the growing memory is faster (docs/inference-performance.md:
    the compiled loop attends to the whole fixed memory from the first token on).
    """
    setting = JitCompile.parse(setting, flag).setting
    if setting != "auto":
        return Choice("whole" if setting == "true" else None, f"--jit_compile={setting}")
    devices = {device_type(d.name) for d in tf.config.list_logical_devices()}
    for accelerator in ("TPU", "GPU"):
        if accelerator in devices:
            return Choice("whole", f"--jit_compile=auto: {accelerator}")
    return Choice(None, "--jit_compile=auto: CPU (the graph loop is faster there); "
                        "--jit_compile=true compiles it")
