"""Importers of released Transformer-XL weights into txl-tf model directories.

Modules (one concept each):
  errors          `WeightImportError`, the one error every importer raises.
  source_weights  `SourceWeights`: named source arrays that must each be used or ignored.
  assignment      assigning named arrays to every variable of a `TransformerXL`, exactly once.
  tf1_checkpoint  the authors' TensorFlow 1 checkpoints (kimiyoung/transformer-xl `tf/`).
  huggingface     Hugging Face `TransfoXLLMHeadModel` directories (transformers v4.30 layout).
  safetensors_io  a dependency-free reader / writer of the `.safetensors` format.
  hdf5_weights    reading a Keras 2 `tf_model.h5` weight file into names and arrays.
  vocab_pickle    a restricted unpickler for the released vocabulary pickles.
  vocab_export    writing `vocab.txt` and `corpus-info.json` next to an imported model.
"""
