"""txl-tf: Transformer-XL for TensorFlow 2 / Keras 3."""
