r"""Export a txl-tf model directory as a SavedModel for TensorFlow Serving.

Example:
  python runners/export.py --model_dir=/ckpt/wt103 --export_dir=/models/txl \
      --mem_len=1600 --clamp_len=1000 --same_length --gen_mem_len=1600

writes /models/txl/<version>/ from the newest checkpoint (--checkpoint=best: MODEL_DIR/best/,
the best on validation; --checkpoint=ckpt-N: another kept one) (version: --version, default one more than the highest existing),
under a temporary name first, so a serving process watching /models/txl never sees half a model.
Signatures: serving_default (= score), score, nll, init_mems, generate, and with
--text_signatures (default) generate_text and score_text; see txl_tf/serving/module.py.

Every request is bounded by limits fixed here and checked inside the graph: --max_seq_len
(tokens per row of score / nll / generate), --max_num_tokens (tokens generated per call),
--max_text_bytes (UTF-8 bytes per text of score_text / generate_text), --max_batch_size (rows
per request), --max_request_tokens and --max_request_bytes (tokens and text bytes of a whole
request). They are recorded in <version>/assets.extra/txl_export.json with the other export
settings. Every signature is batch-major, so TF Serving's batching can merge requests; the
export also writes --warmup_requests TF Serving warmup requests per signature
(<version>/assets.extra/tf_serving_warmup_requests) and, beside the versions, models.config and
batching_parameters.txt for tensorflow_model_server (docs/serving.md).

The text signatures hold tensorflow_text ops: running them needs the TF Text ops registered
(`import tensorflow_text`, or a TF Serving build that includes them). `tf.saved_model.load`
resolves every op when it loads, so a Python consumer without tensorflow_text needs an export
made with --notext_signatures; the session-based loader (TF Serving, `saved_model_cli run`)
runs the id-based signatures of a full export with TensorFlow alone.
Prints one JSON line: {"export_path", "version", "signatures", ...}. Errors are one line on
stderr: exit code 2 for a bad flag or path, 1 for a failure while exporting (unreadable
checkpoint, disk full). --verbosity=0 shows TensorFlow's INFO log.
"""
import json

from absl import app, flags

from runners import cli
from runners.cli import dataclass_flags
from tf_records.model_data import ModelData
from txl_tf.serving.export_options import (INFO_FILE, ExportInputError,  # noqa: F401
                                            ExportOptions, ExportRuntimeError)
from txl_tf.serving.limits import ServingLimits
from txl_tf.runtime.tf_start import benign_lines_dropped
from txl_tf.devices.choices import JIT_COMPILE

FLAGS = flags.FLAGS


def define_flags(fv=flags.FLAGS) -> dict:
    """Defines the flags of this runner (only when it runs as a program, so that its
    functions can be imported beside other runners); returns the groups of --help."""
    dataclass_flags.define_flags(ExportOptions, fv, enums={"gen_jit_compile": JIT_COMPILE})
    return {"Limits of every request (checked in the graph)":
            dataclass_flags.define_flags(ServingLimits, fv)}


def run(options: ExportOptions, limits: ServingLimits = None) -> dict:
    """Exports the model `options` describe; returns the dict export.py prints."""
    cli.quiet_start()
    # TensorFlow loads here, after the flags were checked: --help and usage errors come at once.
    from txl_tf.commands.export import export_model
    with benign_lines_dropped():  # TensorFlow's error-level lines that report no error
        return export_model(options, limits, ModelData())


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    options = dataclass_flags.options_from_flags(ExportOptions, FLAGS)
    cli.check_directories(model_dir=options.model_dir, export_dir=options.export_dir)
    cli.check_model_dirs(model_dir=options.model_dir)
    limits = dataclass_flags.options_from_flags(ServingLimits, FLAGS)
    print(json.dumps(run(options, limits)), flush=True)
    return 0


if __name__ == "__main__":
    cli.run(main, groups=define_flags(), required=("model_dir", "export_dir"))
