"""The measurements of the benchmark tools, one per module; the tools themselves
(`runners/tools/benchmark*.py`) are thin entry points. Those of `benchmark.py`:

  configuration  the flags (train.py's, with the benchmark configuration as defaults, and the
                 benchmark's own) and what is built from them: TensorFlow's set-up, the model
                 configuration, the strategy and the step's compilation;
  train_step     the training step train.py runs (`Trainer.train`), on random tokens;
  evaluation     the evaluation step (forward with memory and labels, one replica);
  steps          `Steps`: one model's training and evaluation steps, timed;
  peak           the dense matmul peak of the run's first device and the MFU against it;
  memory         peak resident memory in child processes, the accelerator's peak and the
                 accumulation chooser's estimate;
  huggingface    the Hugging Face TransfoXL contender (runners/tools/benchmark_huggingface.py
                 in its own environment);
  vanilla        the paper's Table 9: vanilla sliding window against Transformer-XL memory;
  speed          seconds per step and tokens/s of timed steps, median and best;
  report         the printed table and the BENCHMARK_JSON record;
  run            `run_benchmark`: warm-up, interleaved rounds, every figure in one record.
  accelerator_report/  `runners/tools/accelerator_report.py`: the rate, the paper recipes, one
                 against two replicas, the Hugging Face peer and a profile on the devices at
                 hand, within a time budget, in one folder (its own modules, built on these).

Those of the other tools:

  inference_speed  `benchmark_inference.py`: evaluation, cached against uncached generation,
                   the graph loop against one XLA program, the SavedModel in TF Serving's loader;
  data_speed       `benchmark_data.py`: records built from a byte corpus and read back.

The package is named `benchmarks` so that it never shadows the entry point `benchmark.py`.
"""
