"""The loss beyond the cross entropy itself: which targets count, and how a loss is reported.

  half_loss          the paper's "half loss" mask for models without recurrence (section 4.2)
  report             a loss's unit for the data's level, its text, JSON fields and the verdict
                     against the unigram baseline (training, evaluation and the runners)

The cross entropy is the adaptive softmax's (`txl_tf/layers/adaptive_softmax.py`).
"""
