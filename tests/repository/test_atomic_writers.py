"""Every file txl_tf/, tf_records/ and runners/ rewrite is written atomically: through
`txl_tf/storage/atomic_writes.py` or `tf_records/atomic.py` (a temporary name, renamed into
place), so a failure or a signal never leaves a file empty or half-written (a doc opened for
writing before its text was made was left empty). This scans the sources for every way of
opening a file for writing; each one outside the two atomic writers must be listed below with
the reason it is safe."""
import os
import re

import pytest

from package_files import REPO, modules
PACKAGES = ("txl_tf", "tf_records", "runners")
WRITES = re.compile(
    r"""\bopen\(.*['"](?:w|wb|w\+|a|ab|x|xb)['"]\s*[,)]"""  # open(path, "w") and friends
    r"""|\bfdopen\(.*['"](?:w|wb)['"]"""
    r"""|\bjson\.dump\(|\bnp\.save[z]?\(|\.tofile\(|\bshutil\.(?:copy|copyfile|copy2|move)\("""
    r"""|\bTFRecordWriter\(|(?<!atomic)\.write_text\(|(?<!atomic)\.write_bytes\(|\bH5IOStore\(""")

# path -> why its writes are safe (each a temporary name renamed into place, or no rewrite).
ALLOWED = {
    "txl_tf/storage/atomic_writes.py": "the atomic writer itself (temporary name, then rename)",
    "tf_records/atomic.py": "the atomic writer itself (temporary name, then rename)",
    "txl_tf/convert/safetensors_io.py": "mkstemp beside the target, then os.replace",
    "txl_tf/causal_lm/presets/writing.py": "written inside the preset's temporary directory, "
                                           "swapped in whole",
    "txl_tf/causal_lm/presets/weight_bytes.py": "the HDF5 store is in memory (no file)",
    "txl_tf/serving/warmup.py": "written inside the version's temporary directory, swapped in",
    "tf_records/records/writer.py": "into the temporary paths of atomic.atomic_paths",
    "tf_records/download.py": "into the temporary path of atomic.atomic_path",
    "tf_records/prepared_data.py": "copied into the temporary path of atomic.atomic_path",
    "tf_records/text/graph.py": "a derived asset in a private TemporaryDirectory (no rewrite)",
    "runners/tools/launch_local_cluster.py": "appends to a worker's log (no rewrite)",
    "runners/tools/benchmarks/peak_memory.py": "writes /proc/self/clear_refs (a kernel control)",
    "runners/tools/benchmarks/data_speed.py": "a scratch corpus in the benchmark's temporary "
                                               "directory",
    "runners/tools/benchmarks/accelerator_report/output.py": "the profiles' archive is copied to "
                                                             "a hidden name in the report folder, "
                                                             "then renamed",
    "runners/tools/check_huggingface_parity.py": "scratch arrays in the tool's temporary "
                                                  "directory; --report goes through the "
                                                  "atomic writer",
}


def writes():
    """{repository path: [source lines that open a file for writing]}."""
    found = {}
    for path in (p for package in PACKAGES for p in modules(package)):
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            lines = [line.strip() for line in f
                     if WRITES.search(line) and not line.lstrip().startswith("#")]
        if lines:
            found[path] = lines
    return found


def test_every_write_goes_through_an_atomic_writer_or_is_listed():
    unlisted = {path: lines for path, lines in writes().items() if path not in ALLOWED}
    assert not unlisted, ("write these files with txl_tf/storage/atomic_writes.py or "
                          f"tf_records/atomic.py (or list why they are safe): {unlisted}")


@pytest.mark.parametrize("line", [
    'with open(DOC, "w") as f:', "with open(path, 'wb') as out:", 'open(p, "a")',
    "json.dump(record, f)", "np.save(path, array)", "np.savez(path, a=a)", "x.tofile(path)",
    "shutil.copyfile(a, b)", "with tf.io.TFRecordWriter(path) as w:",
    'with open(os.path.join(tmp, NAME), "xb") as f:', "Path(p).write_text(text)"])
def test_the_scan_sees_each_way_of_writing(line):
    assert WRITES.search(line)


@pytest.mark.parametrize("line", ['with open(path) as f:', 'open(path, "rb")',
                                  'open(path, encoding="utf-8")', "json.dumps(record)",
                                  "atomic.write_text(path, text)"])
def test_the_scan_ignores_reads(line):
    assert not WRITES.search(line)
