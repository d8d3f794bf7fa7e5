"""Learned absolute position embeddings of Al-Rfou et al. (2018), the `alrfou`
variant of `txl_tf/model/attention_variants.py`.

Size glossary: B batch, Q segment length, M memory length, K = M + Q, D d_model,
T table length (max_klen).
"""
import keras
import tensorflow as tf


def absolute_table_rows(klen, table_len: int, offset=0) -> tf.Tensor:
    """Rows of a learned absolute table for the K keys [memory; segment], oldest first.

    The table's last rows belong to the newest keys, as the reference: the segment reads the last
    Q rows and the memory the M rows before them, so key j reads row T-K+j, and keys older than
    the table (j < K-T) share row 0 (the reference pads the memory part with it).

    When the last `offset` keys are padding (`TransformerXL.call(segment_padding=...)`), the
    newest real key K-1-offset reads the last row: key j reads row T-K+offset+j, the padding
    keys (attended to by no real query) the last row.

    Args:
      klen: number of keys K, a scalar int (tensor or Python).
      table_len: rows T of the table.
      offset: padding keys at the end (an int or int32 [] tensor); default 0.

    Returns:
      int32 [K], row min(max(T-K+offset+j, 0), T-1) for key j.
    """
    klen = tf.cast(klen, tf.int32)
    rows = tf.range(klen, dtype=tf.int32) + (table_len - klen)
    if not (isinstance(offset, int) and offset == 0):
        rows = tf.minimum(rows + tf.cast(offset, tf.int32), table_len - 1)
    return tf.maximum(rows, 0)


@keras.saving.register_keras_serializable(package="txl_tf")
class LearnedPositionEmbedding(keras.layers.Layer):
    """One layer's learned absolute position embeddings, added to its memory and segment.

    The reference PyTorch model (Al-Rfou et al.) keeps one [T, N, H] table per layer, read as
    [T, N*H] and added to that layer's input and memory; here the table is [T, D] (the same
    numbers when N*H = D, and defined for any N, H). Initialised with the main initializer, as
    the reference's `init_weight` of `r_emb`.

    Args:
      max_klen: rows T of the table (the reference's tgt_len + mem_len).
      d_model: D.
      embeddings_initializer: initializer of the table.

    Call arguments:
      klen: number of keys K = M + Q, a scalar int tensor.
      offset: padding keys at the end of the segment (`absolute_table_rows`); default 0.

    Returns:
      [K, D] in the compute dtype: row j is added to key j of [memory; segment].

    Example:
      >>> emb = LearnedPositionEmbedding(max_klen=12, d_model=16)
      >>> emb(tf.constant(10)).shape
      TensorShape([10, 16])
    """

    def __init__(self, max_klen: int, d_model: int, embeddings_initializer="uniform",
                 **kwargs):
        super().__init__(**kwargs)
        if not isinstance(max_klen, int) or max_klen < 1:
            raise ValueError(f"max_klen must be a positive integer, got {max_klen!r}")
        self.max_klen = max_klen
        self.d_model = d_model
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(name="embeddings", shape=(self.max_klen, self.d_model),
                                          initializer=self.embeddings_initializer)
        self.built = True

    def call(self, klen, offset=0):
        rows = absolute_table_rows(klen, self.max_klen, offset)
        return tf.cast(tf.gather(self.embeddings, rows), self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            max_klen=self.max_klen, d_model=self.d_model,
            embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer))
        return config
