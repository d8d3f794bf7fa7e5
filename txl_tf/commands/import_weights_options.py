"""`ImportOptions`: which released weights runners/import_weights.py imports, and the model
directory it writes (`import_into_model_dir` in `txl_tf/commands/import_weights.py`).
TensorFlow-free, so that import_weights.py's `--help` and usage errors do not wait for it.
"""
import dataclasses
from typing import Optional

from txl_tf.convert.errors import WeightImportError
from txl_tf.model.config import TransformerXLConfig
from txl_tf.runtime.ranges import check_fields
from txl_tf.convert.huggingface import CLUSTER_ORDERS, SAME_LENGTH_SEMANTICS  # noqa: F401

SOURCES = ("tf1", "huggingface")
# The configuration fields a run may set on the imported model (the rest comes from the weights).
RUN_SETTINGS = ("tgt_len", "mem_len", "clamp_len", "same_length", "dropout", "dropatt")


@dataclasses.dataclass
class ImportOptions:
    """An import of released weights (`python runners/import_weights.py`).

    Attributes:
      source: Kind of the source weights.
      checkpoint: --source=tf1: the TF1 checkpoint prefix (e.g. .../model/model.ckpt-0) or its
        directory.
      input_dir: --source=huggingface: directory with config.json and model.safetensors,
        tf_model.h5 or pytorch_model.bin.
      corpus_info: The reference corpus-info.json (vocab_size, cutoffs, dataset) shipped with
        the weights; checked against the checkpoint.
      vocab_pickle: A released vocabulary pickle (cache.pkl); read without running code from it.
      vocab_file: Or a text vocabulary, one symbol per line in id order.
      dataset: Corpus name (enwik8, text8, wt103, lm1b, ...) for the text rules in
        corpus-info.json; default from --corpus_info / the pickle.
      cluster_order: --source=huggingface: order of the cluster logits. 'tf' for transformers
        (v4.x) and the TF1 code; 'reversed' for state dicts of the original kimiyoung PyTorch
        code renamed to the Hugging Face names.
      same_length_semantics: --source=huggingface with same_length: 'paper' keeps mem_len (each
        query sees mem_len + 1 keys, as the original TF code); 'huggingface' stores
        mem_len - 1 so that txl-tf reproduces Hugging Face's outputs exactly.
      model_dir: Output txl-tf model directory (new or empty).
      preset_dir: Also write a Keras preset of the imported model here (new, empty or a
        preset; TransformerXLCausalLM.from_preset reads it).
      tgt_len: Segment length stored in config.json.
      mem_len: Memory length stored in config.json.
      clamp_len: clamp_len stored in config.json (-1: none).
      same_length: same_length stored in config.json.
      dropout: Dropout stored in config.json (for fine-tuning).
      dropatt: Attention dropout stored in config.json.
    """

    source: Optional[str] = None
    checkpoint: Optional[str] = None
    input_dir: Optional[str] = None
    corpus_info: Optional[str] = None
    vocab_pickle: Optional[str] = None
    vocab_file: Optional[str] = None
    dataset: Optional[str] = None
    cluster_order: str = "tf"
    same_length_semantics: str = "paper"
    model_dir: Optional[str] = None
    preset_dir: Optional[str] = None
    tgt_len: Optional[int] = None
    mem_len: Optional[int] = None
    clamp_len: Optional[int] = None
    same_length: Optional[bool] = None
    dropout: Optional[float] = None
    dropatt: Optional[float] = None

    # The declared range of every number (txl_tf/runtime/ranges.py): the model's own.
    RANGES = {name: TransformerXLConfig.RANGES[name] for name in RUN_SETTINGS
              if name in TransformerXLConfig.RANGES}

    def run_settings(self) -> dict:
        """{field: value} of the `RUN_SETTINGS` given."""
        return {name: getattr(self, name) for name in RUN_SETTINGS
                if getattr(self, name) is not None}


def checked(options: ImportOptions) -> ImportOptions:
    """`options`, or a `WeightImportError` naming the flag that is missing or too many, or a
    number outside its range (`ImportOptions.RANGES`)."""
    check_fields(options, WeightImportError, prefix="--")
    if options.source == "tf1" and not options.checkpoint:
        raise WeightImportError("--source=tf1 needs --checkpoint.")
    if options.source == "huggingface" and not options.input_dir:
        raise WeightImportError("--source=huggingface needs --input_dir.")
    if options.vocab_pickle and options.vocab_file:
        raise WeightImportError("pass --vocab_pickle or --vocab_file, not both.")
    return options
