"""The accelerator report (`runners/tools/accelerator_report.py`): what txl-tf does on the
devices at hand, in one folder, within a time budget.

  budget     the time budget: one deadline per part, what each part skipped and why;
  rates      the matmul rate of `txl_tf/training/measurement/matmul_rate.py` in float32 and bfloat16, and
             PyTorch's on the same device as the cross-check where torch imports, measured by
             `torch_rate.py` in a child process (no TensorFlow there: the two CUDA stacks in
             one process died on a GPU);
  recipes    a paper recipe's training step (the benchmark's `Steps`, i.e. `Trainer.train` as
             train.py runs it) for a few dozen steps on random tokens of the recipe's vocabulary:
             compilation, seconds per step, MFU, peak device memory against the accumulation
             chooser's estimate, the FLOP duration estimate against the measured step, losses;
             the profile of a step (TensorBoard's profile plugin);
  replicas   the same step on one and on two replicas (two devices, or one device split in
             two), losses side by side;
  peer       the Hugging Face TransfoXL peer on the NVIDIA WT103 base shape, timed interleaved
             by the benchmark (`runners/tools/benchmarks/run.py`, `huggingface_contender.py`);
  output     report.md, report.json and profiles.tar.gz, and the limits they must fit;
  schedule   `run_report`: the parts in order, each against its deadline.
"""
