"""`ExportOptions`: what runners/export.py exports and its signatures' run settings (read by
the SavedModel writer, `saved_model_writer.export_built_model`, and by `export_model` in
`txl_tf/commands/export.py`), and the export's error classes. TensorFlow-free, so that
export.py's `--help` and usage errors do not wait for it.
"""
import dataclasses
import os
from typing import Optional

from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import Range


INFO_FILE = os.path.join("assets.extra", "txl_export.json")


@dataclasses.dataclass
class ExportOptions:
    """What to export and the run settings of its signatures (the flags of runners/export.py).

    Attributes:
      model_dir: Model directory (config.json, checkpoints, vocab.txt, corpus-info.json).
      export_dir: Base directory; the SavedModel goes to EXPORT_DIR/VERSION.
      checkpoint: Which checkpoint of --model_dir: latest (the newest), best (MODEL_DIR/best/,
        the best on validation), ckpt-N, or a checkpoint path prefix.
      version: Version number (default: highest existing + 1, or 1).
      overwrite: Replace an existing EXPORT_DIR/VERSION.
      tgt_len: Segment length of score_text (default: the model's).
      mem_len: Memory kept by score / nll / score_text (default: the model's).
      clamp_len: Clamp relative distances (default: the model's).
      same_length: same_length of score / nll / score_text (default: the model's).
      gen_mem_len: Memory of the generate signatures (default: --mem_len's value).
      gen_seg_len: Prompt segment length of the generate signatures (default: tgt_len).
      gen_jit_compile: The generate signatures run their whole sampling loop as one XLA program
        (the same tokens; the server needs XLA's JIT): auto (on when this machine has a GPU or
        TPU, off on CPU, where the graph loop is faster), true, false.
      text_signatures: Add generate_text and score_text (need tensorflow_text ops where the
        SavedModel is loaded).
      warmup_requests: TF Serving warmup requests written per signature to
        VERSION/assets.extra/tf_serving_warmup_requests (0: no file).
    """
    model_dir: Optional[str] = None
    export_dir: Optional[str] = None
    # txl_tf.storage.model_files.LATEST, written out: this module stays TensorFlow-free
    checkpoint: str = "latest"
    version: Optional[int] = None
    overwrite: bool = False
    tgt_len: Optional[int] = None
    mem_len: Optional[int] = None
    clamp_len: Optional[int] = None
    same_length: Optional[bool] = None
    gen_mem_len: Optional[int] = None
    gen_seg_len: Optional[int] = None
    gen_jit_compile: str = "auto"
    text_signatures: bool = True
    warmup_requests: int = 2

    # The declared range of every number (txl_tf/runtime/ranges.py).
    RANGES = {
        "version": Range(0, 2**63 - 1, "a SavedModel version"),
        "tgt_len": Range(1, INT32_MAX, "tokens"),
        "mem_len": Range(0, INT32_MAX, "0: no memory"),
        "clamp_len": Range(0, INT32_MAX, "-1: none", also=(-1,)),
        "gen_mem_len": Range(1, INT32_MAX, "generation keeps the context in the memory"),
        "gen_seg_len": Range(1, INT32_MAX, "tokens"),
        "warmup_requests": Range(0, 1000, "TF Serving reads 1,000 records at most, shared "
                                          "by the signatures"),
    }


class ExportInputError(ValueError):
    """A bad flag or path given by the user (exit code 2)."""
    exit_code = 2


class ExportRuntimeError(RuntimeError):
    """A failure while exporting: unreadable model files, disk full... (exit code 1)."""
    exit_code = 1
