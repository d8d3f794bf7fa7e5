"""--lora_rank of a training run: the adapters added before the trainer is built, recorded in
model_dir/lora.json (`txl_tf.storage.lora_record`) so that a resumed run and every reader of
the directory build the same model."""
from typing import Optional

from txl_tf.model.lora import DEFAULT_TARGETS, trainable_share
from txl_tf.storage.lora_record import read_lora_record, write_lora_record
from txl_tf.training.errors import TrainError


def add_adapters(model, model_dir: str, lora_rank: int, is_chief: bool) -> Optional[list]:
    """Freezes `model` and adds the run's adapters: --lora_rank, or the rank model_dir records
    (a resumed LoRA run). Returns the paths adapted, or None for a run of every weight.

    Raises:
      TrainError: --lora_rank differs from the rank model_dir's checkpoints were trained with,
        or an unreadable lora.json.
    """
    try:
        recorded = read_lora_record(model_dir)
    except ValueError as error:
        raise TrainError(str(error)) from None
    if recorded is not None and lora_rank and lora_rank != recorded["rank"]:
        raise TrainError(f"--lora_rank={lora_rank} but {model_dir} holds adapters of rank "
                         f"{recorded['rank']} (lora.json): give --lora_rank="
                         f"{recorded['rank']} or another --model_dir.")
    rank = lora_rank or (recorded or {}).get("rank", 0)
    if not rank:
        return None
    targets = (recorded or {}).get("targets", list(DEFAULT_TARGETS))
    adapted = model.enable_lora(rank, target_names=targets)
    if is_chief:
        write_lora_record(model_dir, rank, targets)
        print(f"LoRA rank {rank}: adapters on {len(adapted)} projections "
              f"({', '.join(targets)} of every layer); {trainable_share(model):.2%} of the "
              "weights train, the rest are frozen.", flush=True)
    return adapted
