"""TF Serving's configuration files for an export: `models.config` and `batching_parameters.txt`.

`runners/export.py` writes both beside the version directories, for

  tensorflow_model_server --model_config_file=EXPORT_DIR/models.config --enable_batching \
      --batching_parameters_file=EXPORT_DIR/batching_parameters.txt

(docs/serving.md). The server's batcher concatenates the rows of queued requests into one call
of the graph, so a batch it forms must pass the export's per-request limits: its largest batch
is the number of rows that each use the most one row may use (`ServingLimits`) and still fit
max_request_tokens and max_request_bytes together.
"""
import math

from txl_tf.serving.limits import ServingLimits

MODELS_CONFIG = "models.config"
BATCHING_PARAMETERS = "batching_parameters.txt"


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
