"""TF Serving's configuration files for an export: `models.config` and `batching_parameters.txt`.

`runners/export.py` writes both beside the version directories, for

  tensorflow_model_server --model_config_file=EXPORT_DIR/models.config --enable_batching \
      --batching_parameters_file=EXPORT_DIR/batching_parameters.txt

(docs/serving.md). The server's batcher concatenates the rows of queued requests into one call
of the graph, so a batch it forms must pass the export's per-request limits: its largest batch
is the number of rows that each use the most one row may use (`ServingLimits`) and still fit
max_request_tokens and max_request_bytes together.

A re-export keeps a file the user edited: `write_files` records the sha256 of each file it
writes (and of each suggestion) in EXPORT_DIR/.txl-server-config.json; a file that is none of
what it wrote last, its last suggestion (a user who took it), and this export's text (or is not a regular file) is kept, and this export's text is written beside
it as NAME.new, with one line on stderr saying so. A file without a record (an export older than
the record) that differs from this export's text is kept the same way.
"""
import hashlib
import json
import math
import os
import sys
from typing import Callable, Dict

from txl_tf.serving.limits import ServingLimits
from txl_tf.storage.atomic_writes import write_json_atomic, write_text_atomic
from untrusted_files import reading
from untrusted_files.errors import UntrustedFileError

MODELS_CONFIG = "models.config"
BATCHING_PARAMETERS = "batching_parameters.txt"
RECORD_FILE = ".txl-server-config.json"  # {file name (or NAME.new): sha256 of what txl-tf wrote}
SUGGESTION_SUFFIX = ".new"
_MAX_READ = 1 << 20  # bytes read of a config file or the record; a larger one counts as edited


def batch_limit(limits: ServingLimits) -> int:
    """The most rows of one server batch: any such rows, each within the per-row limits
    (a generate row: max_seq_len prompt tokens + max_num_tokens; a text: max_text_bytes),
    fit the per-request budgets together. At least 1."""
    row_tokens = limits.max_seq_len + limits.max_num_tokens
    return max(1, min(limits.max_batch_size, limits.max_request_tokens // row_tokens,
                      limits.max_request_bytes // limits.max_text_bytes))


def allowed_batch_sizes(limits: ServingLimits) -> list:
    """Powers of two below `batch_limit`, then `batch_limit` (the batcher pads a batch up to
    the next of them; the last must equal max_batch_size)."""
    largest = batch_limit(limits)
    return [2 ** i for i in range(int(math.log2(largest)) + 1) if 2 ** i < largest] + [largest]


def batching_parameters_text(limits: ServingLimits, batch_threads: int = 2) -> str:
    """A `BatchingParameters` text proto (TF Serving's --batching_parameters_file).

    pad_variable_length_inputs stays off: padding tokens would change scores, and a padded
    output would not split back into a request's own shape. Requests batch together only
    when their non-batch dimensions agree (same Q / P; mems always have mem_len positions).
    """
    sizes = allowed_batch_sizes(limits)
    lines = [f"max_batch_size {{ value: {sizes[-1]} }}",
             "batch_timeout_micros { value: 2000 }",
             "max_enqueued_batches { value: 64 }",
             f"num_batch_threads {{ value: {int(batch_threads)} }}",
             "pad_variable_length_inputs: false"]
    lines += [f"allowed_batch_sizes: {size}" for size in sizes]
    return "\n".join(lines) + "\n"


def models_config_text(name: str, base_path: str) -> str:
    """A `ModelServerConfig` text proto serving the versions under `base_path` as `name`."""
    name, base_path = (v.replace("\\", "\\\\").replace('"', '\\"') for v in (name, base_path))
    return ("model_config_list {\n"
            "  config {\n"
            f"    name: \"{name}\"\n"
            f"    base_path: \"{base_path}\"\n"
            "    model_platform: \"tensorflow\"\n"
            "  }\n"
            "}\n")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_small(path: str):
    """The bytes of regular file `path` (not followed through a symbolic link), None when there
    is nothing at `path`, or False when it is something else or larger than `_MAX_READ`."""
    if not os.path.lexists(path):
        return None
    try:
        return reading.read_bytes(path, inside=os.path.dirname(os.path.abspath(path)),
                                  max_bytes=_MAX_READ)
    except (OSError, UntrustedFileError):
        return False


def _read_record(path: str) -> dict:
    """{name: sha256} of the record, {} when missing or not a record (then no file counts as
    written by txl-tf, so a file that differs from the new text is kept)."""
    data = _read_small(path)
    try:
        record = json.loads(data) if data else {}
    except ValueError:
        return {}
    return ({k: v for k, v in record.items() if isinstance(v, str)}
            if isinstance(record, dict) else {})


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def write_files(export_dir: str, files: Dict[str, str],
                echo: Callable[[str], None] = _stderr) -> dict:
    """Writes `files` ({name: text}) into `export_dir`, atomically, keeping the ones the user
    edited (see the module docstring).

    Returns:
      {"written": {name: path}, "kept": {name: path of this export's suggestion NAME.new}}.

    Raises:
      OSError: a write failed.
    """
    base = os.path.abspath(export_dir)
    record_path = os.path.join(base, RECORD_FILE)
    record = _read_record(record_path)
    written, kept = {}, {}
    for name, text in files.items():
        path, data = os.path.join(base, name), text.encode("utf-8")
        current = _read_small(path)
        suggestion = path + SUGGESTION_SUFFIX
        ours = (record.get(name), record.get(name + SUGGESTION_SUFFIX))
        if current is None or current == data or (
                current is not False and _sha256(current) in ours):
            write_text_atomic(path, text)
            record[name] = _sha256(data)
            written[name] = path
            continue
        write_text_atomic(suggestion, text)
        record[name + SUGGESTION_SUFFIX] = _sha256(data)
        kept[name] = suggestion
        echo(f"{path} differs from what txl-tf wrote there: kept as it is; this export's "
             f"version is in {suggestion} (merge it by hand, or delete {name} and export again "
             "to have it written).")
    write_json_atomic(record_path, record)
    return {"written": written, "kept": kept}
