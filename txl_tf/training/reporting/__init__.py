"""What a training run tells its user, apart from the actions' periodic lines.

  announce  the opening: the configuration text and hparams session (TensorBoard), the chief's
            first lines (the run, how its step is compiled, the unigram baselines) and the
            duration estimate from the model's FLOPs;
  summary   the closing: the summary dict (train_summary.json), its verdict against the
            unigram baseline and its pace fields (seconds per step, MFU), written and printed
            once every worker is done; and the answer of a run already trained.
"""
