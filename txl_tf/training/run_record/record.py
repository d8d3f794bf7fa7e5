"""A run checked against model_dir's record (`check_against_record`) and the record written
(`write_record`): config.json, the data's vocabulary and corpus description, flags.txt."""
import os
from typing import Optional

from txl_tf.storage import model_files
from txl_tf.storage.model_dir_layout import CONFIG_FILE, FLAGS_FILE
from txl_tf.storage.atomic_writes import write_text_atomic
from txl_tf.storage.checkpoint_probes import checkpoint_problem
from txl_tf.model.config import ConfigError, check_against_saved
from txl_tf.training.errors import TrainError
from txl_tf.training.run_record import resume_check
from txl_tf.training.run_record.warm_start import checkpoint_prefix
from txl_tf.training.training_run import TrainingRun


def check_init_checkpoint(path: str, config) -> None:
    """A `TrainError` for an --init_checkpoint that is missing, of another configuration than
    `config` or damaged, before anything is written."""
    checkpoint = checkpoint_prefix(path, config)
    directory = os.path.dirname(checkpoint)
    if os.path.isfile(os.path.join(directory, CONFIG_FILE)):
        try:
            check_against_saved(config, model_files.load_config(directory), "its config.json")
        except ConfigError as error:
            raise TrainError(f"--init_checkpoint={path}: the checkpoint {checkpoint} does not "
                             f"fit a model of this configuration ({' '.join(str(error).split())})"
                             ) from None
    problem = checkpoint_problem(checkpoint)
    if problem:
        raise TrainError(f"--init_checkpoint={path}: the checkpoint {checkpoint} cannot be "
                         f"read: {problem}; give an intact checkpoint.")


def check_against_record(run: TrainingRun) -> Optional[int]:
    """The step a resumed run starts from (None: a new run), after checking this run's settings
    against model_dir's record (`resume_check`): a changed shape or --tgt_len is refused, a
    changed training setting noted in one line each, before anything is written."""
    o = run.options
    config_path = os.path.join(o.model_dir, CONFIG_FILE)
    latest = (model_files.latest_checkpoint(o.model_dir)
              if os.path.exists(config_path) else None)
    if latest is None and o.init_checkpoint:  # a new run: its warm start is checked first
        check_init_checkpoint(o.init_checkpoint, run.config)
    if not os.path.exists(config_path):
        return None
    saved = model_files.load_config(o.model_dir)
    if latest is None:
        check_against_saved(run.config, saved, config_path)
        return None
    step = int(latest.rsplit("-", 1)[1])
    resume_check.check_data(o.model_dir, run.data.data_dir)
    for line in resume_check.resume_notes(o, run.config, saved, config_path, step):
        if run.place.is_chief:
            print(line, flush=True)
    return step


def write_record(run: TrainingRun) -> None:
    """Check the run against model_dir's record; the chief writes config.json, the data's
    files and flags.txt (this start appended to the run's history)."""
    o = run.options
    resumed_at = check_against_record(run)
    os.makedirs(o.model_dir, exist_ok=True)
    if run.place.is_chief:
        model_files.save_config(run.config, o.model_dir)
        run.data.copy_to(o.model_dir)
        if o.flags_text:
            write_text_atomic(os.path.join(o.model_dir, FLAGS_FILE),
                              resume_check.flags_history(o.model_dir, o.flags_text, resumed_at))
