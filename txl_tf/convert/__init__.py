"""Importers of released Transformer-XL weights into txl-tf model directories.

Modules (one concept each):
  errors          `WeightImportError`, the one error every importer raises.
  source_weights  `SourceWeights`: named source arrays that must each be used or ignored.
  assignment      assigning named arrays to every variable of a `TransformerXL`, exactly once.
  tf1_checkpoint  the authors' TensorFlow 1 checkpoints (kimiyoung/transformer-xl `tf/`).
  huggingface     Hugging Face `TransfoXLLMHeadModel` directories (transformers v4.30 layout).
  safetensors_io  a dependency-free reader / writer of the `.safetensors` format.
  hdf5_weights    reading a Keras 2 `tf_model.h5` weight file into names and arrays.
  importer        `import_tf1`, `import_huggingface` and `write_model_dir`: the steps above
                  put together.
The vocabulary shipped with released weights is data: `tf_records.vocab.reference_pickle` reads
the pickles, `tf_records.vocab.imported_files` writes `vocab.txt` and `corpus-info.json`.
"""
