"""Developer tools: benchmarks, the Hugging Face parity check and the local cluster launcher."""
