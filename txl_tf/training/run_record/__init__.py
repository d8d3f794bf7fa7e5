"""A training run's record in its model directory, and where a run starts from it.

  record        checks a run against model_dir's record before anything is written, then
                writes it (config.json, the data's files, flags.txt);
  resume_check  the checks and notes of a resumed run (its shape, --tgt_len, the data's
                vocabulary, changed settings, the saved memory);
  warm_start    the model weights of another model directory or checkpoint (--init_checkpoint);
  start         the step and memory a run starts from: restored, warm-started or fresh
                (model_dir/schedule.json records the schedule they were trained with).
"""
