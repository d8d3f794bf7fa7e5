"""Importing a released vocabulary fails with tf_records' own errors (a `DataError`), so the
runners report it in one line. (That tf_records imports no txl_tf or runners module is
tests/repository/test_package_boundaries.py's.)"""
import tf_records


def test_vocabulary_import_errors_are_tf_records_errors():
    from tf_records.vocab import reference_pickle
    from tf_records.vocab import imported_files

    assert issubclass(reference_pickle.UnsafePickleError, tf_records.VocabularyImportError)
    assert issubclass(tf_records.VocabularyImportError, tf_records.DataError)
    try:
        imported_files.write_vocabulary("/nonexistent-never-made", ["a", "b"], n_token=3)
    except tf_records.VocabularyImportError as error:
        assert "2 symbols but the model has n_token=3" in str(error)
    else:
        raise AssertionError("a vocabulary of another size was accepted")
