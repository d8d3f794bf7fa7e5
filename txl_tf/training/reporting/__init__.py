"""What a training run tells its user, apart from the actions' periodic lines.

  announce         the opening: the configuration text and hparams session (TensorBoard), the
                   chief's first lines (the run, how its step is compiled, the unigram
                   baselines) and the duration estimate from the model's FLOPs;
  train_summary    the closing: the summary dict (train_summary.json), its verdict against the
                   unigram baseline and its pace fields (seconds per step, MFU), written and
                   printed once every worker is done; and the answer of a run already trained;
  tensorboard      TensorBoard's scalars and text of the run (`RunSummaries`, model_dir/train/)
                   and its console lines;
  hparams_session  the run as a session of TensorBoard's HPARAMS dashboard;
  heartbeat        a console line at least every --log_seconds while a compiled loop runs.

What the run measures (pace, duration, matmul peak, device memory) is in `../measurement/`.
"""
