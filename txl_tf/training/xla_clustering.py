"""`--xla_fusion`: XLA compiles the element-wise parts of a step, oneDNN runs its matmuls.

Whole-step XLA (`tf.function(jit_compile=True)`) fuses every element-wise op, but on CPU it also
takes over the matrix products, and XLA:CPU's bfloat16 dots do not use AVX512_BF16: they run at
the float32 rate. Without XLA, TensorFlow's oneDNN kernels run bfloat16 matmuls at twice the
float32 rate but every element-wise op is a separate pass over memory. TensorFlow's XLA
auto-clustering restricted to fusible ops gives both: it compiles the clusters of element-wise
ops, reductions, casts and reshapes (layer norm, softmax, dropout, residual adds, Adam) into XLA
fusions and leaves matrix products, gathers and collectives to TensorFlow's kernels.

It is a process-wide setting that applies to every `tf.function` traced after it but not
inside a function compiled whole (`jit_compile=True`); it goes with
`--precision=mixed_bfloat16`, where `--jit_compile=auto` leaves the training step to it
(`step_compilation.py`). It also turns off Grappler's constant folding: together with this
clustering it leaves the training step of any model with dropout and a few layers as a graph
with a cycle ("N nodes in a cycle"; 2 layers of d_inner 256 on 4 x 32 tokens are enough), and
the step is as fast without it (docs/performance.md).
"""
import os
import sys

CLUSTER_FLAGS = ("--tf_xla_auto_jit=2", "--tf_xla_cpu_global_jit",
                 "--tf_xla_ops_to_cluster=FUSIBLE")


def _missing_flags(environ) -> list:
    present = {flag.split("=")[0] for flag in environ.get("TF_XLA_FLAGS", "").split()}
    return [flag for flag in CLUSTER_FLAGS if flag.split("=")[0] not in present]


def enable_elementwise_clustering() -> None:
    """Turn on XLA auto-clustering of fusible ops for this process.

    TensorFlow reads TF_XLA_FLAGS once, when it loads, so if they are missing this re-executes
    the running program (same interpreter, same arguments) with them added to the environment;
    flags already in TF_XLA_FLAGS are kept. Once they are present it only sets the session's
    auto-clustering level. Call it from a program's `main`, before any `tf.function` runs.
    """
    missing = _missing_flags(os.environ)
    if missing:
        env = dict(os.environ)
        env["TF_XLA_FLAGS"] = " ".join(env.get("TF_XLA_FLAGS", "").split() + missing)
        sys.stdout.flush()
        sys.stderr.flush()
        args = getattr(sys, "orig_argv", None)  # keeps `-m module` and `-c code` (3.10+)
        args = args[1:] if args else sys.argv
        os.execve(sys.executable, [sys.executable] + list(args), env)
    import tensorflow as tf
    tf.config.optimizer.set_jit("autoclustering")
    tf.config.optimizer.set_experimental_options({"constant_folding": False})
