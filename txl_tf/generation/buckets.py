"""The static shapes of a compiled generation: the prompt's bucket and the output's.

XLA compiles one program per shape; the prompt is right-padded to its bucket and the output
written into a buffer of its bucket's width, so that prompts and lengths of one bucket share a
compilation and none pays for more than twice its size. TensorFlow-free.

Example:
  >>> prompt_bucket(300, 128)     # (segment length, padded prompt length)
  (128, 512)
  >>> tokens_bucket(65)
  128
"""


def next_power_of_two(n: int) -> int:
    """The least power of two >= n (1 for n <= 1)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def prompt_bucket(length: int, seg_len: int):
    """(segment length, padded prompt length) of a compiled generation.

    A prompt of `length` <= seg_len tokens is one segment either way; it is right-padded to the
    next power of two, read as one segment of that length (or segments of seg_len, when seg_len
    is no power of two and shorter). A longer one keeps the segments of seg_len
    and is right-padded to a power of two of them: seg_len * 2**ceil(log2(ceil(length /
    seg_len))). With seg_len 128: 16 -> (16, 16), 100 -> (128, 128), 300 -> (128, 512). The
    prompts of one bucket share a compilation, and none pays for more than twice its length.
    """
    length = int(length)
    if length <= seg_len:
        padded = next_power_of_two(length)
        return min(seg_len, padded), padded
    return seg_len, seg_len * next_power_of_two(-(-length // seg_len))


def tokens_bucket(num_tokens: int) -> int:
    """The output buffer of a compiled generation: num_tokens rounded up to a power of two."""
    return next_power_of_two(num_tokens)
