"""What TPUStrategy needs from the training step, proven on the CPU (there is no TPU here).

* The replica training step (`ReplicaStep.step`: forward with the adaptive softmax
  and its cutoffs, backward, all-reduce, clip, Adam) compiled by XLA (`jit_compile=True`, what
  TPUStrategy does to the function given to `strategy.run`) gives the losses, gradient norms,
  weights, optimizer slots and memory of the same step run by TensorFlow's own kernels, over
  several steps with the memory carried and padded (-1) labels: test_jit_compile.py, the
  whole step compiled under the default strategy, which TPUStrategy's compilation is.
* The compiled training loop runs no Python per step (the step function is traced once; a
  second call with another number of steps does not retrace it), contains no string,
  print or py_func op, and loops on device (a `While` op).
* The distributed training data has static per-replica shapes `[per_replica_batch, tgt_len]`.
* The step also compiles under XLA in mixed_bfloat16 (the TPU precision) and follows float32:
  test_jit_compile.py, `test_mixed_bfloat16_compiles_with_the_adaptive_softmax_and_trains`.
* The records follow the strategy's input hosts (a pod slice: hosts x cores per host), and
  `--tpu=local` uses a TPU VM's own chips.
"""
import keras
import pytest
import tensorflow as tf

import tf_records
import txl_tf
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.trainer import Trainer

from tiny import tiny_config

# Word-level shape: adaptive softmax with two tail bins, div_val 2 (projected bins).
CUTOFF_CONFIG = tiny_config(n_token=40, d_embed=16, div_val=2, cutoffs=(10, 25), tgt_len=8,
                            mem_len=8, init_std=0.02)
HOST_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc", "PrintV2", "Print", "StringFormat",
            "AsString", "StringJoin"}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    data_dir = str(tmp_path_factory.mktemp("tpu_ready") / "data")
    layout = tf_records.RecordLayout(tgt_len=8, per_replica_batch=2, replicas_per_host=2)
    tf_records.prepare("synthetic", data_dir, tf_records.RecordPlan({"train": layout}),
                       download=False,
                       progress=False, train_tokens=4000, eval_tokens=500, num_symbols=12,
                       period=10)
    return data_dir, layout


def all_nodes(graph_def):
    yield from graph_def.node
    for function in graph_def.library.function:
        yield from function.node_def


def test_compiled_loop_has_static_shapes_no_host_ops_and_no_per_step_python(records,
                                                                             two_cpu_devices):
    data_dir, layout = records
    strategy = tf.distribute.MirroredStrategy(two_cpu_devices)
    dataset = strategy.distribute_datasets_from_function(
        tf_records.make_input_fn(data_dir, "train", layout))
    for name in ("inputs", "labels"):
        specs = dataset.element_spec[name]._value_specs
        assert len(specs) == 2
        for spec in specs:
            assert spec.shape.as_list() == [layout.per_replica_batch, layout.tgt_len]
            assert spec.dtype == tf.int32
    # One layer: the ops and the tracing checked here do not depend on the stacking.
    config = CUTOFF_CONFIG.replace(n_token=12, cutoffs=(4, 8), dropout=0.1, dropatt=0.1,
                                   n_layer=1)
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = txl_tf.TransformerXL(config)
        optimizer = make_optimizer(1e-3)
    trainer = Trainer(model, optimizer, strategy)
    calls = []
    step_fn = trainer.replica_step.step

    def counted(*args):
        calls.append(1)
        return step_fn(*args)
    trainer.replica_step.step = counted

    iterator = iter(dataset)
    mems = trainer.init_memory(layout.per_replica_batch)
    mems, _ = trainer.train(iterator, mems, 2)
    traced_calls = len(calls)
    assert traced_calls >= 1
    mems, stats = trainer.train(iterator, mems, 5)
    assert stats.steps == 5 and int(trainer.step.numpy()) == 7
    assert len(calls) == traced_calls, "the step's Python ran again: host-side Python per step"
    assert trainer._train_fn.experimental_get_tracing_count() == 1

    graph_def = trainer._train_fn.get_concrete_function(
        iterator, mems, tf.constant(3, tf.int32)).graph.as_graph_def()
    ops = {node.op for node in all_nodes(graph_def)}
    assert "While" in ops, "the steps are not an on-device loop"
    assert not ops & HOST_OPS, ops & HOST_OPS
    string_ops = [(node.op, node.name) for node in all_nodes(graph_def)
                  for value in node.attr.values()
                  if value.type == tf.string.as_datatype_enum
                  or tf.string.as_datatype_enum in list(value.list.type)]
    assert not string_ops, string_ops


def test_records_layout_follows_the_input_hosts_of_the_strategy(two_cpu_devices):
    """A TPU pod slice is one client whose input function runs once per TPU host: the records
    must be laid out for (hosts, cores per host), not for one host holding every core."""
    from types import SimpleNamespace

    from txl_tf.training import distribute as strategy_lib

    assert strategy_lib.input_hosts(tf.distribute.get_strategy()) == (1, 1)
    assert strategy_lib.input_hosts(tf.distribute.MirroredStrategy(two_cpu_devices)) == (1, 2)
    pod = SimpleNamespace(num_replicas_in_sync=32,
                          extended=SimpleNamespace(num_hosts=4, num_replicas_per_host=8))
    assert strategy_lib.input_hosts(pod) == (4, 8)
    uneven = SimpleNamespace(num_replicas_in_sync=16,
                             extended=SimpleNamespace(num_hosts=4, num_replicas_per_host=8))
    with pytest.raises(strategy_lib.StrategyError, match="4 hosts x 8 replicas"):
        strategy_lib.input_hosts(uneven)


def test_tpu_strategy_local_vm_and_named_tpu(monkeypatch):
    """--tpu=local uses this TPU VM's chips (TPUClusterResolver('local'), no cluster to connect
    to); a TPU name or address is resolved and connected first. (No TPU here: TensorFlow's TPU
    entry points are replaced by recorders.)"""
    from txl_tf.training import distribute as strategy_lib

    calls = []

    class Resolver:
        def __init__(self, tpu=None):
            calls.append(("resolver", tpu))

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", Resolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster",
                        lambda r: calls.append(("connect",)))
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system",
                        lambda r: calls.append(("initialize",)))
    monkeypatch.setattr(tf.distribute, "TPUStrategy", lambda r: calls.append(("strategy",)) or r)
    strategy_lib.create_strategy("tpu", tpu="local")
    assert calls == [("resolver", "local"), ("initialize",), ("strategy",)]
    calls.clear()
    strategy_lib.create_strategy("tpu", tpu="my-v3-32")
    assert calls == [("resolver", "my-v3-32"), ("connect",), ("initialize",), ("strategy",)]
