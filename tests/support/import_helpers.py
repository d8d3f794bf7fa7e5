"""Shared helpers of the import tests: writing TF1 checkpoints and running a txl-tf model over
several segments, in the reference's time-major layout for comparison."""
import numpy as np
import tensorflow as tf

import reference_numpy as ref


def write_tf1_checkpoint(prefix, arrays, global_step=None):
    """Write `arrays` ({TF1 name: array}) as the reference code did: graph-mode
    `tf.compat.v1` variables of exactly these names saved by `tf.compat.v1.train.Saver`
    (plus `global_step` when given)."""
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.Variable(arrays[name], name=name) for name in sorted(arrays)]
        if global_step is not None:
            variables.append(tf.compat.v1.Variable(np.int64(global_step), name="global_step"))
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_meta_graph=False)
    return prefix


def run_txl(model, segments, mem_len=None, initial_mems=None):
    """NLL [q, b] and mems (time-major) of `model` over `segments` [(tokens, labels) time-major]."""
    mems = initial_mems if initial_mems is not None else model.init_mems(
        segments[0][0].shape[1], mem_len)
    out = []
    for tokens, labels in segments:
        result = model(tf.constant(tokens.T), mems=mems, labels=tf.constant(labels.T),
                       mem_len=mem_len)
        mems = result["mems"]
        out.append((result["nll"].numpy().T, [np.transpose(m.numpy(), (1, 0, 2)) for m in mems]))
    return out


def run_reference(params, cfg, segments, mem_len, initial_mem_len=None, **options):
    """The NumPy reference over the same segments, from zero memories of `initial_mem_len`."""
    batch = segments[0][0].shape[1]
    m0 = mem_len if initial_mem_len is None else initial_mem_len
    mems = [np.zeros((m0, batch, cfg["d_model"])) for _ in range(cfg["n_layer"])]
    out = []
    for tokens, labels in segments:
        logp, mems = ref.forward(params, cfg, tokens, mems, mem_len, **options)
        nll = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
        out.append((nll, mems))
    return out


def make_segments(rng, n_token, qlen, batch, count):
    stream = rng.integers(0, n_token, size=(qlen * count + 1, batch))
    return [(stream[i * qlen:(i + 1) * qlen], stream[i * qlen + 1:(i + 1) * qlen + 1])
            for i in range(count)]


def compare(txl_out, ref_out, mem_slice=slice(None), name=None):
    """(max relative NLL error, max relative memory error) over all segments; relative means
    max |difference| / max |reference|. With `name`, prints these and the absolute maxima."""
    nll_err = mem_err = nll_abs = mem_abs = 0.0
    for (nll, mems), (ref_nll, ref_mems) in zip(txl_out, ref_out):
        nll_err = max(nll_err, ref.relative_error(nll, ref_nll))
        nll_abs = max(nll_abs, float(np.max(np.abs(nll - ref_nll))))
        for m, rm in zip(mems, ref_mems):
            rm = rm[mem_slice]
            assert m.shape == rm.shape, (m.shape, rm.shape)
            mem_err = max(mem_err, ref.relative_error(m, rm))
            mem_abs = max(mem_abs, float(np.max(np.abs(m - rm))))
    if name:
        print(f"{name}: NLL max abs {nll_abs:.2e} rel {nll_err:.2e}; "
              f"memory max abs {mem_abs:.2e} rel {mem_err:.2e}")
    return nll_err, mem_err
