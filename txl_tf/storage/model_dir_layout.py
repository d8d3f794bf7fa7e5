"""The names of a txl-tf model directory's files and folders: their one owner.

Every reader and writer in txl_tf/ (and runners/) takes a name of a model directory from here;
tests/storage/test_model_dir_layout.py fails when one is written out anywhere else. What each
file holds, in full, is docs/model_dir.md; this is where each name is spelled and who writes it.
This module is names only (standard library), so anything may import it, `model/` included.

  config.json              CONFIG_FILE: the `TransformerXLConfig` (storage/model_files.py's
                           `save_config`: `save_model`, the training run, the importer)
  checkpoint               CHECKPOINT_STATE_FILE: TF's newest-checkpoint state file
                           (`tf.train.CheckpointManager`)
  ckpt-<N>.index, .data-*  CHECKPOINT_NAME: TF checkpoints (training/checkpoints/saving.py,
                           `save_model`); `checkpoint_prefix`
  ckpt-<N>_temp/           SHARDED_TEMP_SUFFIX: TF's sharded save in progress (deleted on resume)
  checkpoint.tmp*          CHECKPOINT_STATE_TEMP: TF's state file being written
  vocab.txt                VOCAB_FILE   } the vocabulary and its corpus description: copied from
  corpus-info.json         CORPUS_INFO_FILE } the data directory by tf_records'
                           `PreparedData.copy_to` (training), written by tf_records'
                           vocab/imported_files.py (the importer). tf_records names them in
                           its own tf_records/data_dir_layout.py (it cannot import txl_tf);
                           tests/storage/test_model_dir_layout.py checks the two agree.
  flags.txt                FLAGS_FILE: the flags of every start of a run
                           (training/run_record/record.py)
  schedule.json            SCHEDULE_FILE: the learning-rate flags (training/run_record/start.py)
  lora.json                LORA_FILE: the LoRA adapters the checkpoints hold
                           (storage/lora_record.py)
  train_summary.json       TRAIN_SUMMARY_FILE: the end of a training run
                           (training/reporting/train_summary.py)
  import.json              IMPORT_FILE: where imported weights came from
                           (commands/import_weights.py)
  .lock                    LOCK_FILE: one writer at a time (storage/dir_lock.py)
  .tmp-*                   TMP_PREFIX: atomic writes in progress (storage/atomic_writes.py)
  best/                    BEST_DIR: the best checkpoint on validation, itself a model directory
                           (training/checkpoints/best_checkpoint.py)
  best/best.json           BEST_FILE: its step and validation loss
  .best-tmp-<step>-<pid>/, .best-old
                           BEST_TMP_PREFIX, BEST_OLD: best/ being swapped in
  memory/worker-<w>/step-<N>/memory.*
                           MEMORY_DIR, `memory_worker_dir`, `memory_step_dir`, MEMORY_PREFIX:
                           each worker's memory (training/checkpoints/worker_memory.py);
                           .tmp-step-*: MEMORY_STEP_TMP_PREFIX, a step being written
  damaged/ckpt-<N>/        DAMAGED_DIR: unreadable checkpoints moved aside, with their memory
                           (DAMAGED_MEMORY_PREFIX: memory-worker-<w>/) and an unparsable
                           `checkpoint` state file (training/checkpoints/damaged.py)
  train/, valid/           TRAIN_EVENTS_DIR, VALID_EVENTS_DIR: TensorBoard
                           (training/reporting/tensorboard.py)
  eval-<split>/            `eval_dir`: TensorBoard of runners/evaluate.py (commands/evaluate.py)
  eval-attn/               ATTENTION_CURVE_DIR: the ablation's loss curve (commands/ablation.py)

A preset (causal_lm/presets/) is a directory of its own, read by the same loaders: CONFIG_FILE,
VOCAB_FILE and CORPUS_INFO_FILE as above, and

  model.weights.h5         PRESET_WEIGHTS_FILE: the backbone's weights (Keras' HDF5 file)
  preprocessor.json        PRESET_PREPROCESSOR_FILE: the serialized preprocessor
  metadata.json            PRESET_METADATA_FILE: versions, parameter count, data, source

Example:
  >>> from txl_tf.storage import model_dir_layout as layout
  >>> layout.path("runs/default", layout.CONFIG_FILE)
  'runs/default/config.json'
  >>> layout.eval_dir("runs/default", "valid")
  'runs/default/eval-valid'
"""
import os
from typing import Optional

CONFIG_FILE = "config.json"
CHECKPOINT_STATE_FILE = "checkpoint"
CHECKPOINT_STATE_TEMP = "checkpoint.tmp"
CHECKPOINT_NAME = "ckpt"
SHARDED_TEMP_SUFFIX = "_temp"
VOCAB_FILE = "vocab.txt"
CORPUS_INFO_FILE = "corpus-info.json"
FLAGS_FILE = "flags.txt"
SCHEDULE_FILE = "schedule.json"
LORA_FILE = "lora.json"
TRAIN_SUMMARY_FILE = "train_summary.json"
IMPORT_FILE = "import.json"
LOCK_FILE = ".lock"
TMP_PREFIX = ".tmp-"  # a name no other file of a model directory has
BEST_DIR = "best"
BEST_FILE = "best.json"
BEST_TMP_PREFIX = ".best-tmp-"
BEST_OLD = ".best-old"
MEMORY_DIR = "memory"
MEMORY_WORKER_PREFIX = "worker-"
MEMORY_STEP_PREFIX = "step-"
MEMORY_STEP_TMP_PREFIX = ".tmp-step-"
MEMORY_PREFIX = "memory"
DAMAGED_DIR = "damaged"
DAMAGED_MEMORY_PREFIX = "memory-worker-"
TRAIN_EVENTS_DIR = "train"
VALID_EVENTS_DIR = "valid"
EVAL_DIR_PREFIX = "eval-"
ATTENTION_CURVE_DIR = EVAL_DIR_PREFIX + "attn"

PRESET_WEIGHTS_FILE = "model.weights.h5"
PRESET_PREPROCESSOR_FILE = "preprocessor.json"
PRESET_METADATA_FILE = "metadata.json"
VOCAB_FILES = (VOCAB_FILE, CORPUS_INFO_FILE)  # the vocabulary pair of a model dir or preset
PRESET_FILES = (CONFIG_FILE, PRESET_WEIGHTS_FILE, PRESET_PREPROCESSOR_FILE,
                PRESET_METADATA_FILE) + VOCAB_FILES


def path(model_dir: str, *names: str) -> str:
    """`model_dir/names...`: the path of one of this module's names in `model_dir`."""
    return os.path.join(model_dir, *names)


def config_path(model_dir: str) -> str:
    """`model_dir/config.json`."""
    return os.path.join(model_dir, CONFIG_FILE)


def checkpoint_basename(step: int) -> str:
    """`ckpt-<step>`: the name of the checkpoint of `step` (its files add .index, .data-*)."""
    return f"{CHECKPOINT_NAME}-{step}"


def checkpoint_step(name: str) -> Optional[int]:
    """N of a checkpoint's name `ckpt-N` (a path's last part), or None for any other name."""
    head, _, number = os.path.basename(name).partition("-")
    return int(number) if head == CHECKPOINT_NAME and number.isdigit() else None


def checkpoint_prefix(directory: str, step: int) -> str:
    """`directory/ckpt-<step>`: the path prefix of the checkpoint of `step`."""
    return os.path.join(directory, checkpoint_basename(step))


def eval_dir(model_dir: str, split: str) -> str:
    """`model_dir/eval-<split>`: runners/evaluate.py's TensorBoard directory for `split`."""
    return os.path.join(model_dir, f"{EVAL_DIR_PREFIX}{split}")


def memory_worker_dir(model_dir: str, worker: int) -> str:
    """`model_dir/memory/worker-<worker>`: the directory of a worker's memory steps."""
    return os.path.join(model_dir, MEMORY_DIR, f"{MEMORY_WORKER_PREFIX}{worker}")


def memory_step_dir(model_dir: str, worker: int, step: int) -> str:
    """`model_dir/memory/worker-<worker>/step-<step>`: a worker's memory after `step`."""
    return os.path.join(memory_worker_dir(model_dir, worker), f"{MEMORY_STEP_PREFIX}{step}")


def missing_config_message(model_dir: str) -> str:
    """The line for a model directory without config.json (checked before TensorFlow loads by
    the runners, and by `model_files.load_config`)."""
    return (f"{config_path(model_dir)} not found: {model_dir!r} is not a txl-tf "
            "model directory (train one with runners/train.py, import one with "
            "runners/import_weights.py, or save one with txl_tf.save_model).")
