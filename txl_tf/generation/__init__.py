"""Generation: choosing tokens after a prompt, through the model's memory.

  sampler           `Sampler`, the one type of the sampling settings (temperature, top_k,
                    top_p, seed), TensorFlow-free; `get_sampler` (keras-hub's names)
  sampling          the choice itself in TensorFlow: filtered logits, seeded per-row draws
                    (`choose`), the in-graph checks of the settings
  call_bounds       the ranges of one call's numbers, checked before the int32 cast
  buckets           the static shapes of the compiled loop (prompt_bucket, tokens_bucket)
  memory_fit        check_generation_fits: the largest step fits, for the path that will run
  graph_loop        the graph loop with the growing memory (model_step, consume_prompt,
                    decode, generate_ids)
  fixed_loop        the same with a fixed-size memory and static shapes, for XLA
                    (generate_fixed)
  generator         `Generator`: both loops behind one object (generate.py, the benchmarks)
  text_generation   the Keras model's generate: strings or ids in and out (keras-hub's
                    conventions), with stop_tokens (generate's stop_token_ids) and
                    prompt_datasets (prompts from a tf.data.Dataset)
  errors            `CausalLMInputError`, the one error of generation's and the Keras
                    model's input

The settings travel typed: sampling as one `Sampler`, memory as one
`txl_tf.model.context_settings.ContextSettings` (tgt_len: the prompt's segment length); the
doors (`Generator`, the Keras model's `generate`, generate.py, the SavedModel in
`txl_tf/serving/`) build them. Nothing here imports causal_lm/, serving/ or commands/, which
are built on it (tests/repository/test_package_boundaries.py).
"""
