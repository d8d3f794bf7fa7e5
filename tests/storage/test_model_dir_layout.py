"""One owner of a model directory's names: `txl_tf/storage/model_dir_layout.py`.

Every file and folder name of a model directory (and of a preset) is spelled there and nowhere
else in txl_tf/ or runners/: the scan below parses every module and fails on a string that is
one of the layout's names (docstrings aside: they may say what a file is). The vocabulary pair
is also a data directory's, named by tf_records (`tf_records/data_dir_layout.py`), which cannot
import txl_tf: the two spellings must agree, and so must the marker files by which
`untrusted_files.dir_kinds` (standard library only) recognises each kind of directory.
"""
import ast
import os

import pytest

from tf_records import data_dir_layout
from txl_tf.storage import model_dir_layout as layout
from untrusted_files import dir_kinds

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OWNER = "txl_tf/storage/model_dir_layout.py"
SCANNED_PACKAGES = ("txl_tf", "runners")

# The layout's names that are also ordinary words of the code (a checkpoint choice "best", the
# splits "train" and "valid", a JSON field "checkpoint", a variable name "memory"): a string
# equal to one of them is not a file name, so they are not scanned for.
ORDINARY_WORDS = {layout.CHECKPOINT_STATE_FILE, layout.CHECKPOINT_NAME, layout.BEST_DIR,
                  layout.MEMORY_DIR, layout.MEMORY_PREFIX, layout.DAMAGED_DIR,
                  layout.TRAIN_EVENTS_DIR, layout.VALID_EVENTS_DIR, layout.SHARDED_TEMP_SUFFIX,
                  layout.MEMORY_WORKER_PREFIX, layout.MEMORY_STEP_PREFIX}
# Names built with a number or a split after them: scanned as the start of a string or f-string
# ("ckpt-" as in f"ckpt-{step}", "eval-" as in f"eval-{split}").
PREFIXES = (f"{layout.CHECKPOINT_NAME}-", layout.EVAL_DIR_PREFIX)
# Strings equal to a layout name that name another thing, with the reason.
ELSEWHERE = {
    ("txl_tf/convert/huggingface.py", "config.json"): "a Hugging Face directory's config.json",
    ("txl_tf/convert/safetensors_io.py", ".tmp-"): "the temporary of a safetensors file the "
                                                   "converter writes, beside it",
}


def layout_names():
    """Every string constant of the layout module (its names of files and folders)."""
    names = set()
    for key, value in vars(layout).items():
        if key.isupper() and isinstance(value, str):
            names.add(value)
        elif key.isupper() and isinstance(value, tuple):
            names.update(v for v in value if isinstance(v, str))
    return names


SCANNED = sorted(layout_names() - ORDINARY_WORDS)


def test_the_scan_looks_for_every_distinctive_name():
    assert {"config.json", "vocab.txt", "corpus-info.json", "flags.txt", "schedule.json",
            "lora.json", "train_summary.json", "import.json", ".lock", "best.json",
            ".best-tmp-", ".best-old", ".tmp-", ".tmp-step-", "checkpoint.tmp",
            "model.weights.h5", "preprocessor.json", "metadata.json", "eval-attn",
            "memory-worker-"} <= set(SCANNED)


def docstrings(tree):
    """The docstring nodes of a module and of its classes and functions."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                yield body[0].value


def spelled_names(source: str, path: str):
    """(line, name) for each string of `source` that spells a layout name: a string equal to
    one of `SCANNED`, or a string or f-string that starts with one of `PREFIXES`."""
    tree = ast.parse(source, path)
    skip = {id(node) for node in docstrings(tree)}
    in_fstrings = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                   for v in node.values}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and str(first.value).startswith(PREFIXES):
                yield node.lineno, str(first.value)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in in_fstrings):
            if node.value in SCANNED or node.value.startswith(PREFIXES):
                yield node.lineno, node.value


def modules():
    for package in SCANNED_PACKAGES:
        for directory, dirs, names in os.walk(os.path.join(REPO, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(directory, name), REPO).replace(os.sep, "/")


def test_no_module_but_the_owner_spells_a_model_directory_name():
    found = []
    for path in modules():
        if path == OWNER:
            continue
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            source = f.read()
        found += [f"{path}:{line} spells {name!r}" for line, name in spelled_names(source, path)
                  if (path, name) not in ELSEWHERE]
    assert not found, ("model directory names outside txl_tf/storage/model_dir_layout.py "
                       "(use its constants):\n" + "\n".join(found))


@pytest.mark.parametrize("source,expected", [
    ('import os\nos.path.join(d, "config.json")\n', [(2, "config.json")]),
    ('x = f"ckpt-{n}.index"\n', [(1, "ckpt-")]),
    ('x = f"eval-{split}"\n', [(1, "eval-")]),
    ('def f():\n    """Reads config.json."""\n    return "best"\n', []),
    ('x = f"{d}/config.json is missing"\n', []),
])
def test_the_scan_sees_names_in_calls_and_fstrings_not_in_docstrings(source, expected):
    assert list(spelled_names(source, "example.py")) == expected


def test_the_owner_module_spells_the_names_it_documents():
    with open(os.path.join(REPO, OWNER), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read()))
    missing = [name for name in SCANNED if name.rstrip("-") not in doc]
    assert not missing, f"names the layout's docstring does not describe: {missing}"


def test_the_vocabulary_pair_has_one_spelling_in_txl_tf_and_tf_records():
    """Training copies the data directory's vocab.txt and corpus-info.json into the model
    directory (and run_record/resume_check reads both directories' corpus-info.json with the
    model directory's name): the two owners must spell them alike."""
    assert layout.VOCAB_FILE == data_dir_layout.VOCAB_FILE
    assert layout.CORPUS_INFO_FILE == data_dir_layout.CORPUS_INFO_FILE


def test_the_directory_kinds_recognise_the_layouts_names():
    """untrusted_files (standard library only, below both libraries) tells a model directory,
    a preset and a data directory apart by marker files: each is one of the owners' names."""
    model_names = layout_names() | {layout.CHECKPOINT_STATE_FILE}
    assert set(dir_kinds._MODEL_FILES) <= model_names  # noqa: SLF001
    assert set(dir_kinds._PRESET_FILES) <= set(layout.PRESET_FILES)  # noqa: SLF001
    assert set(dir_kinds._DATA_FILES) <= {data_dir_layout.CORPUS_INFO_FILE,  # noqa: SLF001
                                          data_dir_layout.VOCAB_FILE}
