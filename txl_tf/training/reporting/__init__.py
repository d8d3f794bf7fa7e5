"""What a training run tells its user, apart from the actions' periodic lines.

  tensorboard      TensorBoard's scalars and text of the run (`RunSummaries`, model_dir/train/)
                   and its console lines;
  hparams_session  the run as a session of TensorBoard's HPARAMS dashboard;
  heartbeat        a console line at least every --log_seconds while a compiled loop runs.

What the run measures (pace, duration, matmul peak, device memory) is in `../measurement/`.
The opening lines (`../announce.py`) and the closing summary (train_summary.json,
`../train_summary.py`) read the `TrainingRun`, its controller and its record, so they lie
above this folder and `../run_record/`.
"""
