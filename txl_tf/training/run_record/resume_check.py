"""A resumed run against the run's record, before anything is written.

The record: `config.json` (the model and its run settings) and `flags.txt` (the flags of every
start of the run, oldest first, each block under a `# run started ...` comment line; absl
reads it as a flagfile where the last value wins, so `--flagfile=model_dir/flags.txt` repeats
the newest start). A resumed run:

* refuses a changed model shape (`config.check_against_saved`), a changed `--tgt_len` (the
  data position of a resumed run counts segments of the run's length) and data of another
  vocabulary (`check_data`);
* continues with one `note:` line per changed training setting (`--dropout`, `--half_loss`,
  `--clip`, ...; the learning-rate schedule has its own line, `lr_schedule.schedule_change_notice`);
* restarts the memory from zeros with one warning when the saved memory no longer fits
  (`--mem_len` or the batch changed; `memory_fits`).
"""
import os
import time
from typing import Dict, List, Optional, Sequence

from txl_tf.model.config import TransformerXLConfig, check_against_saved
# model_dir's corpus-info.json is the data's copy (the data source's copy_to), so one name
# serves both directories (tests/storage/test_model_dir_layout.py checks tf_records agrees)
from txl_tf.storage.model_dir_layout import CORPUS_INFO_FILE, FLAGS_FILE
from txl_tf.training.errors import TrainError
from untrusted_files import reading, schema
from untrusted_files.errors import UntrustedFileError

# Config fields a resumed run may change, with a note (mem_len: see `memory_fits`).
NOTED_CONFIG_FIELDS = ("dropout", "dropatt", "clamp_len", "same_length")
# TrainOptions fields a resumed run may change, with a note (the schedule's fields, the batch
# and bookkeeping such as --log_steps are said elsewhere or change no result).
NOTED_TRAIN_FIELDS = ("half_loss", "clip", "precision", "seed", "num_passes")


def parse_flags_text(text: str) -> Dict[str, str]:
    """{name: value text} of absl flagfile text; the last value of a name wins, `--noname` is
    'false', `--name` 'true', comments are skipped."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("--"):
            continue
        name, sep, value = line[2:].partition("=")
        if not sep:
            name, value = (name[2:], "false") if name.startswith("no") else (name, "true")
        values[name] = value
    return values


def _read(path: str) -> str:
    """The text of a file of model_dir (read as one from elsewhere), "" when it is missing,
    unreadable or refused."""
    try:
        return reading.read_text(path, inside=os.path.dirname(os.path.abspath(path)),
                                 max_bytes=reading.MAX_JSON_BYTES)
    except (OSError, UntrustedFileError):
        return ""


def _show(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def resume_notes(o, config: TransformerXLConfig, saved: TransformerXLConfig,
                 where: str, step: int) -> List[str]:
    """The `note:` lines of a run resumed at `step` with other settings than its record.

    Args:
      o: this run's `TrainOptions` (`model_dir` holds the record).
      config: this run's model configuration.
      saved: the configuration of the run's config.json (`where` names it).
      step: the step resumed from.

    Returns:
      One line per changed training setting (empty when nothing changed).

    Raises:
      ConfigError: a changed model shape.
      TrainError: a changed --tgt_len.
    """
    check_against_saved(config, saved, where)
    if config.tgt_len != saved.tgt_len:
        raise TrainError(
            f"--tgt_len={config.tgt_len} differs from the run's {saved.tgt_len} ({where}): a "
            f"resumed run keeps its segment length; give --tgt_len={saved.tgt_len}, or a new "
            "--model_dir (with --init_checkpoint to start from these weights).")
    changed = [(name, getattr(config, name), getattr(saved, name))
               for name in NOTED_CONFIG_FIELDS if getattr(config, name) != getattr(saved, name)]
    before = parse_flags_text(_read(os.path.join(o.model_dir, FLAGS_FILE)))
    for name in NOTED_TRAIN_FIELDS:
        if name in before and _show(getattr(o, name)) != before[name]:
            changed.append((name, _show(getattr(o, name)), before[name]))
    return [f"note: resuming at step {step} with --{name}={_show(new)} (was {_show(old)})."
            for name, new, old in changed]


def _vocab_checksum(directory: str) -> Optional[str]:
    info = reading.read_json_or_none(os.path.join(directory, CORPUS_INFO_FILE),
                                     schema=schema.INFO_FIELDS_SCHEMA)
    return None if info is None else info.get("vocab_checksum")


def check_data(model_dir: str, data_dir: str) -> None:
    """A `TrainError` when the data's vocabulary is not the one the run was trained on (the
    `vocab_checksum` of both corpus-info.json files, where recorded): a vocabulary of the same
    size would otherwise train on silently, and its files replace the run's."""
    ours, theirs = _vocab_checksum(model_dir), _vocab_checksum(data_dir)
    if ours and theirs and ours != theirs:
        raise TrainError(
            f"--data_dir={data_dir} holds vocabulary {theirs}, the run in {model_dir} was "
            f"trained on {ours} ({os.path.join(model_dir, CORPUS_INFO_FILE)}); give the run's "
            "--data_dir, or a new --model_dir.")


def memory_fits(memory: Optional[Sequence], rows: int, mem_len: int) -> Optional[str]:
    """None when the saved memory (L arrays [rows, M, D]) fits this run; else the warning line
    of a memory restarted from zeros."""
    if not memory:
        return None
    saved_rows, saved_len = memory[0].shape[0], memory[0].shape[1]
    if (saved_rows, saved_len) == (rows, mem_len):
        return None
    return (f"warning: the saved memory holds {saved_rows} streams x {saved_len} positions, this "
            f"run {rows} x {mem_len} (--mem_len or the batch changed): the memory restarts from "
            "zeros.")


def flags_history(model_dir: str, flags_text: str, step: Optional[int]) -> str:
    """flags.txt's text with this start of the run appended (a new run: this start alone)."""
    header = (f"# run started {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} "
              + (f"(resumed at step {step})" if step else "(new run)") + "\n")
    old = _read(os.path.join(model_dir, FLAGS_FILE)) if step else ""
    if old and not old.endswith("\n"):
        old += "\n"
    return old + header + flags_text
