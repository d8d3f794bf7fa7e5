"""lora.json of a model directory: the LoRA adapters its checkpoints hold.

A run of runners/train.py with --lora_rank writes {"rank": r, "targets": [...]} next to
config.json; every reader of the directory (`load_model`, so evaluate.py, generate.py,
export.py and `from_preset`) adds the same adapters before restoring, and a resumed run keeps
them. Without the file a directory holds a plain model.
"""
import os
from typing import Optional

from txl_tf.storage.atomic_writes import write_json_atomic
from untrusted_files import reading
from txl_tf.storage.model_dir_layout import LORA_FILE


def read_lora_record(model_dir: str) -> Optional[dict]:
    """{"rank": int, "targets": [str]} of `model_dir`, or None (no lora.json).

    Raises:
      ValueError: the file is not such a record (one line naming it).
    """
    path = os.path.join(model_dir, LORA_FILE)
    if not os.path.lexists(path):
        return None
    fix = 'write it again as {"rank": 8, "targets": ["qkv", "o"]} or remove it'
    record = reading.read_json(path, inside=model_dir, error=ValueError, name=path, fix=fix)
    try:
        rank, targets = record["rank"], [str(t) for t in record["targets"]]
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ValueError(f"rank {rank!r} is not a positive integer")
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a LoRA record ({error}); {fix}.") from None
    return {"rank": rank, "targets": targets}


def write_lora_record(model_dir: str, rank: int, targets) -> None:
    """Writes lora.json (atomically)."""
    write_json_atomic(os.path.join(model_dir, LORA_FILE),
                      {"rank": int(rank), "targets": list(targets)})


def apply_lora_record(model, model_dir: str) -> Optional[list]:
    """Adds the adapters `model_dir` records to `model` (before its checkpoint is restored);
    returns the paths adapted, or None when the directory holds a plain model."""
    record = read_lora_record(model_dir)
    if record is None:
        return None
    return model.enable_lora(record["rank"], target_names=record["targets"])
