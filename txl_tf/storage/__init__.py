"""What txl-tf reads and writes on disk, and how it writes it.

  model_files        a model directory: its layout, saving, choosing and loading a model
  checkpoint_probes  which TF checkpoints a directory holds and whether one reads whole
  weight_counts      the weights a saved file holds against those a configuration reads
  atomic_writes      the package's one atomic writer: a file or a directory, complete or absent
  text_files         a text file a user names, read whole but bounded, as one clear error
  dir_lock           the package's one flock: one run per directory (`locked`, the runners'
                     `.lock`) and a directory held for a few renames (`directory_locked`)

The data package keeps its own writer (`tf_records/atomic.py`): it never imports `txl_tf`.
"""
