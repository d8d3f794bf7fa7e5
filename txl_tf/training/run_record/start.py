"""`starting_point`: the step and memory a run starts from, restored from model_dir's newest
checkpoint, warm-started from --init_checkpoint, or fresh."""
import os
from typing import Optional

from absl import logging

from txl_tf.storage.atomic_writes import write_json_atomic
from txl_tf.storage.model_dir_layout import SCHEDULE_FILE
from txl_tf.training.lr_schedule import schedule_change_notice, schedule_flags
from txl_tf.training.run_record import resume_check
from txl_tf.training.run_record.warm_start import warm_start
from txl_tf.training.training_run import TrainingRun
from untrusted_files import reading


def starting_point(run: TrainingRun, step: Optional[int], memory) -> tuple:
    """(step, per-replica memory) to start from after `TrainCheckpoints.restore` gave
    (`step`, `memory`): the restored ones, or step 0 (warm-started from `init_checkpoint`) and
    zeros; a saved memory that no longer fits [rows, mem_len, d_model] restarts from zeros with
    one line. The chief records this run's schedule (model_dir/schedule.json)."""
    o, ckpts = run.options, run.checkpoints
    schedule_path = os.path.join(o.model_dir, SCHEDULE_FILE)
    if step is not None:
        logging.info("resumed from %s at step %d (memory %s)", ckpts.restored_path, step,
                     "restored" if memory is not None else "reset to zeros")
        notice = schedule_change_notice(reading.read_json_or_none(schedule_path),
                                        schedule_flags(o), step)
        if notice and run.place.is_chief:
            print(notice, flush=True)
    else:
        step = 0
        if o.init_checkpoint:
            logging.info("warm start from %s",
                         warm_start(run.model, o.init_checkpoint, run.config))
    mismatch = resume_check.memory_fits(memory, run.place.per_replica * run.place.local,
                                        run.config.mem_len)
    if mismatch:
        if run.place.is_chief:
            print(mismatch, flush=True)
        memory = None
    mems = (run.trainer.memory_from_host(memory) if memory is not None
            else run.trainer.init_memory(run.place.per_replica))
    if run.place.is_chief:
        write_json_atomic(schedule_path, schedule_flags(o))
    return step, mems
