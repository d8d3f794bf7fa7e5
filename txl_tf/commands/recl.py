"""A RECL measurement of a model group (runners/recl.py): `ReclOptions` -> the table of
`txl_tf.inference.relative_effective_context` at r = 0.1, 0.5, 1.0.

`load_group(model_dirs)` reads the group; `measure_recl(models, tokens, options)` scores the
tokens of a split at every context length of the grid (`txl_tf.inference.context_losses`) and
runs the search of the paper's Appendix C (`txl_tf.inference.relative_effective_context`).
"""
import os
from typing import Dict, Sequence

import numpy as np

from txl_tf.storage import model_files
from txl_tf.commands.recl_options import ReclOptions
from txl_tf.runtime.ranges import check_fields
from txl_tf.inference.context_losses import context_losses, scored_positions
from txl_tf.inference.relative_effective_context import (RECL_RATIOS, ReclInputError,
                                                         check_context_lengths, recl_table)


def load_group(model_dirs: Sequence[str]) -> dict:
    """name -> model of each directory, in inference mode (no dropout); the names are the
    directories' last path components, the whole path where two share one."""
    models = {}
    for model_dir in model_dirs:
        name = os.path.basename(os.path.normpath(model_dir)) or model_dir
        if name in models:
            name = model_dir
        models[name] = model_files.load_model(model_dir, dropout=0.0, dropatt=0.0)
    return models


def check_options(options: ReclOptions) -> None:
    """Refuses options no measurement can use, before any work.

    Raises:
      ReclInputError: a threshold outside (0, 1), batch_tokens or num_tokens below 1, or a bad
        grid (`check_context_lengths`).
    """
    check_fields(options, ReclInputError, prefix="--")  # ReclOptions.RANGES
    check_context_lengths([int(c) for c in options.context_lengths])


def measure_recl(models: Dict[str, "object"], tokens, options: ReclOptions):
    """Per-token losses of every model at every context length, then RECL at r = 0.1, 0.5, 1.0.

    Args:
      models: name -> `TransformerXL`, the group (each read with `default_regime` of its config:
        segments with memory when mem_len > 0, else one window of c tokens).
      tokens: int [S] the scored split's token stream.
      options: the `ReclOptions`.

    Returns:
      (dict ratio -> `Recl`, float32 losses [N, C, T]); T, the tokens really scored, is at most
      `options.num_tokens` (fewer when the split is shorter).

    Raises:
      ReclInputError, ContextLossError: a bad grid, too short a stream (one line).
    """
    contexts = check_context_lengths([int(c) for c in options.context_lengths])
    positions = scored_positions(len(tokens), contexts, options.num_tokens)
    losses = np.stack([context_losses(model, tokens, positions, contexts,
                                      batch_tokens=options.batch_tokens, progress=True)
                       for model in models.values()])
    return recl_table(losses, contexts, RECL_RATIOS, options.threshold), losses
