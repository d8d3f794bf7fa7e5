"""Records: per-replica contiguity under MirroredStrategy, multi-host layout, resume, options."""
import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

import tf_records


def prepare_synthetic(data_dir, layouts, **opts):
    opts = {"train_tokens": 5000, "eval_tokens": 700, "num_symbols": 50, "period": 40, **opts}
    tf_records.prepare("synthetic", data_dir, tf_records.RecordPlan(layouts or {}), progress=False,
                       **opts)
    return np.fromfile(os.path.join(data_dir, "train.ids.bin"), "<i4")


def naive_streams(tokens, num_streams):
    """Row s = a contiguous slice of the original stream (row-major cut)."""
    length = len(tokens) // num_streams
    return [tokens[s * length:(s + 1) * length] for s in range(num_streams)]


def test_two_replicas_see_their_own_contiguous_streams(tmp_path, two_cpu_devices):
    layout = tf_records.RecordLayout(tgt_len=16, per_replica_batch=3, replicas_per_host=2)
    tokens = prepare_synthetic(tmp_path, {"train": layout})
    meta = tf_records.find_records(tmp_path, "train", layout)
    rows = naive_streams(tokens, layout.num_streams)
    strategy = tf.distribute.MirroredStrategy(two_cpu_devices)
    input_fn = tf_records.make_input_fn(tmp_path, "train", layout, repeat=False)
    dist = strategy.distribute_datasets_from_function(input_fn)
    seen = {s: [] for s in range(layout.num_streams)}
    steps = 0
    for batch in dist:
        inputs = strategy.experimental_local_results(batch["inputs"])
        labels = strategy.experimental_local_results(batch["labels"])
        assert len(inputs) == 2
        for replica, (x, y) in enumerate(zip(inputs, labels)):
            assert x.shape == (3, 16) and x.dtype == tf.int32
            assert two_cpu_devices[replica].split(":")[-1] in x.device.split(":")[-1]
            x, y = x.numpy(), y.numpy()
            for b in range(3):
                stream = replica * 3 + b
                if seen[stream]:  # continues exactly where the previous step ended
                    assert seen[stream][-1][1][-1] == x[b, 0]
                np.testing.assert_array_equal(y[b, :-1], x[b, 1:])
                seen[stream].append((x[b], y[b]))
        steps += 1
    assert steps == meta["num_steps"] == (len(tokens) // 6 - 1) // 16
    for s in range(layout.num_streams):
        got = np.concatenate([x for x, _ in seen[s]])
        np.testing.assert_array_equal(got, rows[s][:len(got)])
        np.testing.assert_array_equal(np.concatenate([y for _, y in seen[s]]), rows[s][1:len(got) + 1])
    # Together the streams cover the corpus in order (up to each row's dropped tail).
    covered = np.concatenate([np.concatenate([x for x, _ in seen[s]]) for s in range(6)])
    assert len(covered) > 0.9 * len(tokens)


def test_multi_host_files_are_disjoint_and_equal_single_host_layout(tmp_path):
    single = tf_records.RecordLayout(tgt_len=8, per_replica_batch=2, replicas_per_host=4)
    multi = tf_records.RecordLayout(tgt_len=8, per_replica_batch=2, replicas_per_host=2, num_hosts=2)
    assert single.num_streams == multi.num_streams
    prepare_synthetic(tmp_path / "one", {"train": single})
    prepare_synthetic(tmp_path / "two", {"train": multi})
    meta = tf_records.find_records(tmp_path / "two", "train", multi)
    assert len(meta["files"]) == 2 and set(meta["files"][0]).isdisjoint(meta["files"][1])

    def host_batches(data_dir, layout, host, num_hosts):
        ctx = tf.distribute.InputContext(num_input_pipelines=num_hosts, input_pipeline_id=host,
                                         num_replicas_in_sync=layout.num_replicas)
        ds = tf_records.make_input_fn(data_dir, "train", layout, repeat=False)(ctx)
        return [e["inputs"].numpy() for e in ds]

    one = host_batches(tmp_path / "one", single, 0, 1)
    h0 = host_batches(tmp_path / "two", multi, 0, 2)
    h1 = host_batches(tmp_path / "two", multi, 1, 2)
    steps = meta["num_steps"]
    assert len(one) == 4 * steps and len(h0) == len(h1) == 2 * steps
    for t in range(steps):
        # single host: replicas 0..3 at step t; host h holds global replicas 2h, 2h+1.
        np.testing.assert_array_equal(np.concatenate(one[4 * t:4 * t + 4]),
                                      np.concatenate(h0[2 * t:2 * t + 2] + h1[2 * t:2 * t + 2]))
    # Host 1 never reads host 0's streams: its first batch is stream 4's start, not stream 0's.
    assert not np.array_equal(h0[0], h1[0])
    with pytest.raises(tf_records.LayoutError, match="laid out for 2 hosts"):
        tf_records.make_input_fn(tmp_path / "two", "train", multi)(None)
    ctx = tf.distribute.InputContext(num_input_pipelines=3, input_pipeline_id=0, num_replicas_in_sync=6)
    with pytest.raises(tf_records.LayoutError, match="3 input pipelines"):
        tf_records.make_input_fn(tmp_path / "two", "train", multi)(ctx)


def test_a_host_needs_only_its_own_record_files(tmp_path):
    """Each machine of a multi-host job holds only its own host's files: host 0 reads with host
    1's files absent; host 1 gets a clear error naming its missing file."""
    layout = tf_records.RecordLayout(tgt_len=8, per_replica_batch=2, replicas_per_host=1,
                                     num_hosts=2)
    prepare_synthetic(tmp_path, {"train": layout})
    meta = tf_records.find_records(tmp_path, "train", layout)
    expected = [e["inputs"].numpy() for e in tf_records.make_input_fn(tmp_path, "train", layout, repeat=False)(
        tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=0,
                                   num_replicas_in_sync=2))]
    for path in meta["paths"][1]:
        os.remove(path)
    input_fn = tf_records.make_input_fn(tmp_path, "train", layout, repeat=False)

    def context(host):
        return tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=host,
                                          num_replicas_in_sync=2)

    got = [e["inputs"].numpy() for e in input_fn(context(0))]
    assert len(got) == len(expected) > 0
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(tf_records.RecordsCorruptError, match="missing"):
        input_fn(context(1))


def test_start_step_resumes_exactly_and_wraps(tmp_path):
    layout = tf_records.RecordLayout(tgt_len=10, per_replica_batch=2, replicas_per_host=2)
    prepare_synthetic(tmp_path, {"train": layout})
    steps = tf_records.find_records(tmp_path, "train", layout)["num_steps"]
    full = [e["inputs"].numpy() for e in tf_records.make_input_fn(tmp_path, "train", layout, repeat=False)()]
    for start in (0, 3, steps - 1, steps + 2, 3 * steps + 1):
        ds = tf_records.make_input_fn(tmp_path, "train", layout, repeat=True, start_step=start)()
        got = [e["inputs"].numpy() for e in ds.take(2 * (steps + 1))]
        for k, x in enumerate(got):
            step, replica = divmod(k, 2)
            np.testing.assert_array_equal(x, full[2 * ((start + step) % steps) + replica])
    with pytest.raises(tf_records.DataError, match="past the end"):
        tf_records.make_input_fn(tmp_path, "train", layout, repeat=False, start_step=steps)()


@pytest.mark.parametrize("last_segment,num_passes", [("drop", 1), ("pad", 1), ("drop", 3)])
def test_records_equal_in_memory_dataset(tmp_path, last_segment, num_passes):
    layout = tf_records.RecordLayout(tgt_len=7, per_replica_batch=3, replicas_per_host=2,
                                     num_passes=num_passes, last_segment=last_segment)
    prepare_synthetic(tmp_path, {"valid": layout})
    meta = tf_records.find_records(tmp_path, "valid", layout)
    tokens = np.fromfile(tmp_path / "valid.ids.bin", "<i4")
    from_records = [e for e in tf_records.make_input_fn(tmp_path, "valid", layout, repeat=False)()]
    mem = tf_records.dataset_from_tokens(
        tokens, 3, 7, replicas_per_host=2, last_segment=last_segment, num_passes=num_passes,
        reading=tf_records.TokenReading(pass_offsets=meta["pass_offsets"]))
    from_memory = list(mem)
    assert len(from_records) == len(from_memory) == 2 * meta["num_steps"] == 2 * mem.num_steps
    for a, b in zip(from_records, from_memory):
        for k in ("inputs", "labels"):
            np.testing.assert_array_equal(a[k].numpy(), b[k].numpy())
    # Naive check of the cut: rebuild the concatenated passes and the row-major rows.
    data = np.concatenate([np.roll(tokens, -o) for o in meta["pass_offsets"]])
    if last_segment == "pad":
        length = -(-len(data) // 6)
        data = np.concatenate([data, np.full(6 * length - len(data), -1)])
    length = len(data) // 6
    labels = np.stack([e["labels"].numpy() for e in from_records])  # [steps*2, 3, 7]
    labels = labels.reshape(-1, 2, 3, 7).transpose(1, 2, 0, 3).reshape(6, -1)
    for s in range(6):
        row = data[s * length:(s + 1) * length][1:]
        n = min(len(row), labels.shape[1])
        np.testing.assert_array_equal(labels[s, :n], row[:n])
        assert (labels[s, n:] == -1).all()
    if last_segment == "pad":  # every token except each row's first is a label exactly once
        assert meta["num_labels"] == int((labels >= 0).sum()) == len(tokens) - 6
    if num_passes > 1:
        assert meta["pass_offsets"][0] == 0 and len(set(meta["pass_offsets"])) == 3


def test_metadata_contents_and_fast_noop(tmp_path):
    layout = tf_records.RecordLayout(tgt_len=12, per_replica_batch=2)
    prepare_synthetic(tmp_path, {"train": layout, "test": layout})
    info = json.loads((tmp_path / "corpus-info.json").read_text())
    meta = tf_records.find_records(tmp_path, "train", layout, vocab_size=50)
    for key in ("dataset", "split", "vocab_size", "vocab_checksum", "cutoffs", "tgt_len", "num_hosts",
                "replicas_per_host", "per_replica_batch", "num_steps", "num_tokens", "files"):
        assert key in meta
    assert meta["vocab_checksum"] == info["vocab_checksum"] == tf_records.load_vocab(tmp_path).checksum()
    assert meta["num_tokens"] == info["num_tokens"]["train"] == 5000
    assert meta["best_loss_nats"] == pytest.approx(math.log(50) / 4)  # ln K / (repeats + 1)
    assert meta["files"] == [["train.bsz-2.tlen-12.core-1.hosts-1.passes-1.host-000.tfrecords"]]
    mtime = os.path.getmtime(tmp_path / meta["files"][0][0])
    summary = tf_records.prepare("synthetic", tmp_path, tf_records.RecordPlan({"train": layout}),
                                 progress=False,
                                 train_tokens=5000, eval_tokens=700, num_symbols=50, period=40)
    assert summary["records"]["train"]["written"] is False
    assert os.path.getmtime(tmp_path / meta["files"][0][0]) == mtime
