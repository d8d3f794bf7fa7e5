"""A re-export keeps models.config and batching_parameters.txt when the user edited them
(`txl_tf.serving.server_config.write_files`): this export's text goes beside each as NAME.new,
with one line saying so; files txl-tf wrote and nobody changed are updated."""
import itertools
import os

import pytest

from txl_tf.serving import server_config
from txl_tf.serving.limits import ServingLimits

NAMES = (server_config.MODELS_CONFIG, server_config.BATCHING_PARAMETERS)


def texts(batch_threads):
    """One export's {name: text}; another `batch_threads` makes other texts of both files."""
    return {server_config.MODELS_CONFIG: server_config.models_config_text(
                f"txl{batch_threads}", "/models/txl"),
            server_config.BATCHING_PARAMETERS: server_config.batching_parameters_text(
                ServingLimits(), batch_threads=batch_threads)}


def export(directory, batch_threads):
    lines = []
    done = server_config.write_files(str(directory), texts(batch_threads), echo=lines.append)
    return done, lines


def test_unedited_files_are_updated(tmp_path):
    export(tmp_path, 1)
    done, lines = export(tmp_path, 2)
    assert lines == [] and done["kept"] == {}
    for name in NAMES:
        assert (tmp_path / name).read_text() == texts(2)[name]
        assert not (tmp_path / (name + server_config.SUGGESTION_SUFFIX)).exists()


# Every non-empty set of files the user changed, and every way of changing one.
EDITS = {"edited": lambda p: p.write_text(p.read_text() + "# tuned by hand\n"),
         "replaced by a link": lambda p: (p.unlink(), p.symlink_to(p.parent / "elsewhere")),
         "larger than any config": lambda p: p.write_bytes(b"#" * (2 << 20))}
CASES = [(names, how) for n in (1, 2) for names in itertools.combinations(NAMES, n)
         for how in EDITS]


@pytest.mark.parametrize("edited,how", CASES)
def test_a_file_the_user_changed_is_kept_and_the_new_text_goes_beside_it(tmp_path, edited, how):
    (tmp_path / "elsewhere").write_text("not a config\n")
    export(tmp_path, 1)
    before = {}
    for name in edited:
        EDITS[how](tmp_path / name)
        before[name] = os.readlink(tmp_path / name) if (tmp_path / name).is_symlink() else \
            (tmp_path / name).read_bytes()
    for _ in range(2):  # the file stays kept on every later export
        done, lines = export(tmp_path, 2)
        assert sorted(done["kept"]) == sorted(edited)
        assert len(lines) == len(edited)
        for name in NAMES:
            path = tmp_path / name
            if name in edited:
                now = os.readlink(path) if path.is_symlink() else path.read_bytes()
                assert now == before[name]
                suggestion = tmp_path / (name + server_config.SUGGESTION_SUFFIX)
                assert suggestion.read_text() == texts(2)[name]
                assert any(str(path) in line and str(suggestion) in line for line in lines)
            else:
                assert path.read_text() == texts(2)[name]
    assert (tmp_path / "elsewhere").read_text() == "not a config\n"


def test_a_file_made_like_the_suggestion_is_written_again(tmp_path):
    """The user merged by taking the suggestion: the next export updates the file again."""
    export(tmp_path, 1)
    path = tmp_path / server_config.MODELS_CONFIG
    path.write_text("# mine\n")
    export(tmp_path, 2)
    path.write_text(texts(2)[server_config.MODELS_CONFIG])
    done, lines = export(tmp_path, 3)
    assert lines == [] and done["kept"] == {}
    assert path.read_text() == texts(3)[server_config.MODELS_CONFIG]


@pytest.mark.parametrize("record", [None, "not json", "[1, 2]"])
def test_without_a_record_only_a_different_file_is_kept(tmp_path, record):
    """An export older than the record, or a damaged record: a file that equals this export's
    text is fine, one that differs is kept (it may be the user's)."""
    files = texts(1)
    (tmp_path / server_config.MODELS_CONFIG).write_text(files[server_config.MODELS_CONFIG])
    (tmp_path / server_config.BATCHING_PARAMETERS).write_text("max_batch_size { value: 3 }\n")
    if record is not None:
        (tmp_path / server_config.RECORD_FILE).write_text(record)
    done, lines = export(tmp_path, 1)
    assert list(done["kept"]) == [server_config.BATCHING_PARAMETERS] and len(lines) == 1
    assert (tmp_path / server_config.BATCHING_PARAMETERS).read_text() == \
        "max_batch_size { value: 3 }\n"


def test_export_writes_through_it(tmp_path, capsys):
    """The export's writer (`saved_model_writer.write_server_config`, what `export.py` and the
    Keras model's `export` call) keeps an edited file and reports it."""
    from txl_tf.serving import saved_model_writer

    small, large = ServingLimits(max_batch_size=2), ServingLimits(max_batch_size=4)
    files, kept = saved_model_writer.write_server_config(str(tmp_path), "txl", small)
    assert kept == {} and sorted(files) == sorted(NAMES)
    edited = tmp_path / server_config.BATCHING_PARAMETERS
    edited.write_text(edited.read_text().replace("num_batch_threads { value: 2 }",
                                                 "num_batch_threads { value: 16 }"))
    mine = edited.read_text()
    files, kept = saved_model_writer.write_server_config(str(tmp_path), "txl", large)
    assert edited.read_text() == mine
    assert kept == {server_config.BATCHING_PARAMETERS: str(edited) + ".new"}
    assert (tmp_path / (server_config.BATCHING_PARAMETERS + ".new")).read_text() == \
        server_config.batching_parameters_text(large)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and str(edited) in err[0]
