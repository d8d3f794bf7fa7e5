"""Training machinery: the step loop (`Trainer`), the outer loop with its periodic actions,
optimizer and learning-rate schedule, checkpoints, distribution strategies and summaries."""
