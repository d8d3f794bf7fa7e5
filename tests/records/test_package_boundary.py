"""tf_records stands alone: none of its modules imports txl_tf or runners."""
import os
import pkgutil
import subprocess
import sys

import tf_records

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_no_module_of_tf_records_imports_txl_tf_or_runners():
    names = sorted(m.name for m in pkgutil.walk_packages(tf_records.__path__, "tf_records."))
    assert "tf_records.vocab.imported_files" in names
    assert "tf_records.vocab.reference_pickle" in names
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module(name)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('txl_tf', 'runners'))\n"
            "print(bad)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


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
