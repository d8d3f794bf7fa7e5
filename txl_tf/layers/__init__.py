"""The Keras 3 layers of Transformer-XL; `txl_tf` re-exports the public ones."""
