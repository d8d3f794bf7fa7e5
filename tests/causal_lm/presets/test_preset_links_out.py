"""A preset or model directory from someone else never makes the program read, copy or publish
a file outside it: a vocab.txt (or any file of the directory) that is a link to a file outside
is refused, even with the vocab_checksum removed from corpus-info.json; and a weights file
whose datasets would inflate beyond what config.json implies is refused before inflating."""
import json
import os

import h5py
import numpy as np
import pytest

from causal_lm_support import WORDS, from_preset, model_dir
from txl_tf.causal_lm.presets.from_model_dir import preset_from_model_dir
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.storage.model_dir_layout import PRESET_WEIGHTS_FILE

SECRET = "SECRET-OUTSIDE-LINE"


def outside_vocab(root):
    """A file outside the directories: a valid vocabulary whose lines a leak would show."""
    path = root / "outside" / "private.txt"
    path.parent.mkdir()
    path.write_text("\n".join(WORDS[:2] + [SECRET] + WORDS[3:]) + "\n")
    return path


def drop_checksum(directory):
    info_path = directory / "corpus-info.json"
    info = json.loads(info_path.read_text())
    info.pop("vocab_checksum")
    info_path.write_text(json.dumps(info))


@pytest.fixture
def linked(tmp_path):
    """A model directory and its preset, each with vocab.txt linked to a file outside and no
    vocab_checksum."""
    model, _ = model_dir(tmp_path / "model")
    preset = preset_from_model_dir(model, str(tmp_path / "preset"))
    secret = outside_vocab(tmp_path)
    for directory in (tmp_path / "model", tmp_path / "preset"):
        (directory / "vocab.txt").unlink()
        (directory / "vocab.txt").symlink_to(secret)
        drop_checksum(directory)
    return tmp_path, model, preset


def files_holding(root, needle):
    found = []
    for top, _, names in os.walk(root):
        for name in names:
            path = os.path.join(top, name)
            if not os.path.islink(path) and "outside" not in path:
                with open(path, "rb") as f:
                    if needle.encode() in f.read():
                        found.append(path)
    return found


@pytest.mark.parametrize("which", ["model", "preset"])
def test_a_vocab_link_out_is_refused_and_nothing_is_copied(linked, which):
    root, model, preset = linked
    source = model if which == "model" else preset
    with pytest.raises(CausalLMInputError, match="leads outside") as error:
        from_preset(source).save_to_preset(str(root / "copy"))
    assert "\n" not in str(error.value) and SECRET not in str(error.value)
    with pytest.raises(CausalLMInputError, match="leads outside"):
        preset_from_model_dir(model, str(root / "copy2"))
    assert not (root / "copy").exists() and not (root / "copy2").exists()
    assert files_holding(root, SECRET) == []


def test_a_link_inside_the_directory_is_read(tmp_path):
    model, _ = model_dir(tmp_path / "model")
    (tmp_path / "model" / "vocab.real").write_bytes((tmp_path / "model" / "vocab.txt").read_bytes())
    (tmp_path / "model" / "vocab.txt").unlink()
    (tmp_path / "model" / "vocab.txt").symlink_to("vocab.real")
    assert from_preset(model).preprocessor.vocabulary_size == len(WORDS)


def test_a_weights_file_that_would_inflate_is_refused_before_reading(tmp_path):
    """A compressed dataset of zeros far larger than any weight of config.json's model: the
    file is small, its dataset's shape is compared before one value is read."""
    model, _ = model_dir(tmp_path / "model")
    preset = preset_from_model_dir(model, str(tmp_path / "preset"))
    weights = os.path.join(preset, PRESET_WEIGHTS_FILE)
    with h5py.File(weights, "a") as f:
        name = next(n for n in f.keys())
        f.create_dataset(f"{name}/inflated", shape=(2**16, 2**14), dtype=np.float32,
                         compression="gzip", fillvalue=0.0, chunks=(1024, 1024))
    assert os.path.getsize(weights) < 4 * 2**20  # small on disk, 4 GiB inflated
    with pytest.raises(CausalLMInputError, match="larger than any weight") as error:
        from_preset(preset)
    assert "\n" not in str(error.value)


def test_save_to_preset_refuses_a_model_directory(tmp_path):
    model, _ = model_dir(tmp_path / "model")
    other, _ = model_dir(tmp_path / "other")
    before = sorted(os.listdir(other))
    with pytest.raises(CausalLMInputError, match="is a model directory"):
        from_preset(model).save_to_preset(other)
    assert sorted(os.listdir(other)) == before
