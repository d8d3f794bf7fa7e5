"""PreparedData: one object for a prepared data directory (recorded corpus, records for a
layout made on demand, input functions, unigram baseline, copy into a model directory)."""
import json
import os
import threading
import time

import numpy as np
import pytest

import tf_records
from tf_records import DataOptions, PreparedData
from tf_records.records import store

SYNTHETIC = {"train_tokens": 3_000, "eval_tokens": 600, "num_symbols": 16, "period": 24}


def synthetic(data_dir, **options):
    return PreparedData(DataOptions(data_dir=str(data_dir), dataset="synthetic",
                                    corpus_options=dict(SYNTHETIC, **options)))


def test_ensure_records_makes_then_finds_and_reports_the_corpus(tmp_path):
    data = synthetic(tmp_path / "d")
    assert data.info is None
    layouts = {"train": data.layout(8, 2), "valid": data.layout(8, 1)}
    metas = data.ensure_records(layouts)
    assert sorted(metas) == ["train", "valid"]
    assert metas["train"]["per_replica_batch"] == 2 and metas["valid"]["tgt_len"] == 8
    info = data.info
    assert data.vocab_size == info["vocab_size"] == metas["train"]["vocab_size"]
    assert data.level == info["level"] and data.cutoffs == tuple(info["cutoffs"])
    mtime = os.path.getmtime(tmp_path / "d" / metas["train"]["files"][0][0])
    again = data.ensure_records(layouts)  # found, not rewritten
    assert again["train"]["files"] == metas["train"]["files"]
    assert os.path.getmtime(tmp_path / "d" / metas["train"]["files"][0][0]) == mtime


def test_a_directory_alone_reuses_the_recorded_dataset_and_options(tmp_path):
    synthetic(tmp_path / "d").ensure_records({"train": tf_records.RecordLayout(8, 2)})
    data = PreparedData(str(tmp_path / "d"))
    assert data.dataset == "synthetic"
    assert data.corpus_options["train_tokens"] == SYNTHETIC["train_tokens"]
    # Options given only to change something: the recorded ones are kept, others refused.
    same = PreparedData(DataOptions(data_dir=str(tmp_path / "d"), dataset=None))
    assert same.dataset == "synthetic"
    with pytest.raises(tf_records.DataError, match=r"period: 24 -> 48"):
        synthetic(tmp_path / "d", period=48)


def test_another_dataset_than_the_recorded_one_is_one_line(tmp_path):
    synthetic(tmp_path / "d").ensure_records({"valid": tf_records.RecordLayout(8, 1)})
    with pytest.raises(tf_records.DataError) as error:
        PreparedData(DataOptions(data_dir=str(tmp_path / "d"), dataset="builtin"))
    assert str(error.value) == (f"--data_dir={tmp_path / 'd'} holds 'synthetic', not "
                                "--dataset='builtin'; fix one of the two.")


def test_records_that_cannot_be_made_name_the_prepare_command(tmp_path):
    data = PreparedData(DataOptions(data_dir=str(tmp_path / "e"), dataset="enwik8",
                                    download=False))
    layout = data.layout(16, 4)
    with pytest.raises(tf_records.RecordsNotFoundError) as error:
        data.ensure_records({"train": layout, "valid": layout})
    text = str(error.value)
    assert text.startswith(f"no train/valid records for this run's layout in {tmp_path / 'e'}")
    assert ("Make them with:\n  python runners/prepare_data.py --dataset=enwik8 "
            f"--data_dir={tmp_path / 'e'} --splits=train,valid --tgt_len=16 "
            "--per_replica_batch=4") in text
    assert "(runners/train.py could not make them itself: " in text
    # Different layouts: one command per split.
    with pytest.raises(tf_records.RecordsNotFoundError) as error:
        data.ensure_records({"train": layout, "valid": data.layout(16, 1)})
    assert "--splits=train " in str(error.value) and "--splits=valid " in str(error.value)


def test_a_failed_download_passes_through(tmp_path):
    data = PreparedData(DataOptions(data_dir=str(tmp_path / "e"), dataset="enwik8",
                                    corpus_options={"url": "http://127.0.0.1:9/enwik8.zip"}))
    with pytest.raises(tf_records.DownloadError, match="--raw_path"):
        data.ensure_records({"train": data.layout(16, 4)})


def test_non_chief_waits_for_the_records_the_chief_makes(tmp_path):
    """The chief prepares the records while the other workers wait for them."""
    data = synthetic(tmp_path / "d")
    layouts = {"train": data.layout(8, 2), "valid": data.layout(8, 2)}
    with pytest.raises(tf_records.DataError):
        data.ensure_records(layouts, may_prepare=False, wait_seconds=0)
    found = {}
    waiter = threading.Thread(target=lambda: found.update(
        synthetic(tmp_path / "d").ensure_records(layouts, may_prepare=False, wait_seconds=120)))
    waiter.start()
    time.sleep(1.5)
    assert waiter.is_alive() and not found  # still waiting: nothing written yet
    chief = data.ensure_records(layouts, may_prepare=True)
    waiter.join(timeout=120)
    assert not waiter.is_alive()
    assert sorted(found) == ["train", "valid"]
    assert found["train"]["files"] == chief["train"]["files"]


def test_input_fn_makes_missing_records_from_the_cache_only_when_asked(tmp_path):
    synthetic(tmp_path / "d").ensure_records({"train": tf_records.RecordLayout(8, 2)})
    data = PreparedData(str(tmp_path / "d"))
    layout = data.layout(8, 3, last_segment="pad")
    with pytest.raises(tf_records.RecordsNotFoundError, match="prepare_data.py"):
        data.input_fn("test", layout)
    input_fn = data.input_fn("test", layout, verify="size", make_from_cache=True,
                             progress=False)
    batches = list(input_fn())
    assert len(batches) == input_fn.metadata["num_steps"]
    labels = np.concatenate([b["labels"].numpy().ravel() for b in batches])
    assert (labels >= 0).sum() == input_fn.metadata["num_labels"]
    # A directory never prepared: the error of the missing records, nothing is built there.
    empty = PreparedData(str(tmp_path / "empty"))
    with pytest.raises(tf_records.RecordsNotFoundError, match="prepare_data.py"):
        empty.input_fn("test", layout, make_from_cache=True)
    assert not os.path.exists(tmp_path / "empty" / "vocab.txt")


def test_unigram_entropy_is_that_of_the_token_counts(tmp_path):
    data = synthetic(tmp_path / "d")
    data.ensure_records({"valid": data.layout(8, 1)})
    tokens = data.token_stream("train")
    assert tokens.dtype == np.int32 and tokens.size == data.info["num_tokens"]["train"]
    p = np.bincount(tokens) / tokens.size
    p = p[p > 0]
    assert data.unigram_entropy() == pytest.approx(-(p * np.log(p)).sum(), rel=1e-12)
    assert data.unigram_entropy(max_tokens=tokens.size - 1) is None
    assert PreparedData(str(tmp_path / "none")).unigram_entropy() is None


def test_copy_to_writes_the_vocabulary_files_and_the_data_dir(tmp_path):
    data = synthetic(tmp_path / "d")
    data.ensure_records({"valid": data.layout(8, 1)})
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    old_umask = os.umask(0o027)
    try:
        data.copy_to(str(model_dir))
    finally:
        os.umask(old_umask)
    assert (model_dir / "vocab.txt").read_bytes() == (tmp_path / "d" / "vocab.txt").read_bytes()
    info = json.loads((model_dir / "corpus-info.json").read_text())
    assert info == dict(data.info, data_dir=os.path.abspath(tmp_path / "d"))
    for name in ("vocab.txt", "corpus-info.json"):
        assert (model_dir / name).stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(model_dir)) == ["corpus-info.json", "vocab.txt"]  # no temp left
    vocab = data.vocabulary()
    assert len(vocab.vocab) == data.vocab_size and vocab.level == data.level


def test_records_found_by_ensure_records_are_not_looked_up_again(tmp_path, monkeypatch):
    data = synthetic(tmp_path / "d")
    layouts = {"train": data.layout(8, 2), "valid": data.layout(8, 1)}
    metas = data.ensure_records(layouts)
    looked_up = []
    real = store.find_or_make
    monkeypatch.setattr(store, "find_or_make",
                        lambda *a, **k: looked_up.append(a[1]) or real(*a, **k))
    for split, layout in layouts.items():
        assert data.input_fn(split, layout).metadata["files"] == metas[split]["files"]
    assert looked_up == []
    other = data.layout(8, 1)  # valid's layout, for train: not found yet, looked up once
    with pytest.raises(tf_records.DataError):
        data.input_fn("train", other)
    assert looked_up == ["train"]
    with pytest.raises(tf_records.DataError, match="vocab"):  # a reused one is still checked
        data.input_fn("train", layouts["train"], vocab_size=metas["train"]["vocab_size"] + 1)
