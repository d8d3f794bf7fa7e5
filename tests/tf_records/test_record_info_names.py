"""A record_info-<split>-*.json must be its name's: a train record_info copied under the valid
name (or edited to say "valid", its checksum recomputed) is refused in one line instead of
scoring the train records as valid ones; a record file named outside data_dir is refused."""
import json
import shutil

import pytest

import tf_records
from tf_records.errors import RecordsCorruptError
from tf_records.records import metadata, store
from tf_records.records.layout import RecordLayout
from tiny import SYNTHETIC

LAYOUT = RecordLayout(8, 2)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("names") / "data"
    tf_records.prepare("synthetic", str(root), tf_records.RecordPlan({"train": LAYOUT, "valid": LAYOUT}),
                       download=False, progress=False, **SYNTHETIC)
    return root


@pytest.fixture
def data(pristine, tmp_path):
    shutil.copytree(pristine, tmp_path / "data")
    return tmp_path / "data"


def info_path(data, split):
    return data / metadata.info_file(LAYOUT, split)


def test_the_valid_records_are_found(data):
    assert store.find_records(str(data), "valid", LAYOUT)["split"] == "valid"


def test_a_train_record_info_copied_as_valid_is_refused(data):
    shutil.copyfile(info_path(data, "train"), info_path(data, "valid"))
    with pytest.raises(RecordsCorruptError, match="records split 'train'") as error:
        store.find_records(str(data), "valid", LAYOUT)
    assert "\n" not in str(error.value) and "prepare_data.py" in str(error.value)


def test_an_edited_split_with_a_recomputed_checksum_is_refused_by_its_files(data):
    meta = json.loads(info_path(data, "train").read_text())
    meta["split"] = "valid"
    meta["info_sha256"] = metadata.info_checksum(meta)
    info_path(data, "valid").write_text(json.dumps(meta))
    with pytest.raises(RecordsCorruptError, match="names the record file 'train"):
        store.find_records(str(data), "valid", LAYOUT)


@pytest.mark.parametrize("name", ["../outside.tfrecords", "/etc/passwd", ".."])
def test_a_record_file_outside_data_dir_is_refused(data, name):
    meta = json.loads(info_path(data, "valid").read_text())
    meta["files"] = [[name]]
    meta["info_sha256"] = metadata.info_checksum(meta)
    info_path(data, "valid").write_text(json.dumps(meta))
    with pytest.raises(RecordsCorruptError, match="a file name without a directory part"):
        store.find_records(str(data), "valid", LAYOUT)
