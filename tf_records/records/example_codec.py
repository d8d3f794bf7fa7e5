"""Vectorized serialization of `tf.train.Example` protos with fixed-length int64 features.

Building one `tf.train.Example` per record in Python costs tens of microseconds, and a corpus of
100M tokens has hundreds of thousands of records. Instead the protocol-buffer wire format of a
whole block of records is written at once with numpy: every record becomes one row of a byte
matrix with a validity mask (a varint of up to `K` bytes occupies `K` slots, of which the
first `len` are valid), and one boolean compress of the matrix yields all records back to back.
The bytes are canonical: identical to `tf.train.Example.SerializeToString(deterministic=True)`
(a test checks it).

Wire layout of one record (every `len` is a varint):

```
Example   = 0x0A len(Features) Features
Features  = for each feature: 0x0A len(Entry) Entry
Entry     = 0x0A len(key) key 0x12 len(Feature) Feature
Feature   = 0x1A len(Int64List) Int64List
Int64List = 0x0A len(packed) packed-varints
```
"""
import numpy as np


def _as_unsigned(values: np.ndarray) -> np.ndarray:
    """Integer array -> unsigned array with the same varint bytes (two's complement for < 0)."""
    values = np.asarray(values)
    if values.size and values.min() >= 0 and values.max() < 2**32:
        return values.astype(np.uint32, copy=False)
    return values.astype(np.int64, copy=False).view(np.uint64)


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """Bytes of the varint encoding of each unsigned value (1..10), int32, same shape."""
    vmax = int(values.max()) if values.size else 0
    n = np.ones(values.shape, np.int32)
    k = 1
    while k < 10 and vmax >= (1 << (7 * k)):
        n += values >= values.dtype.type(1 << (7 * k))
        k += 1
    return n


class _Rows:
    """A [R, W] byte matrix with a validity mask, filled block by block (left to right)."""

    def __init__(self, num_rows, width):
        self.bytes = np.zeros((num_rows, width), np.uint8)
        self.mask = np.zeros((num_rows, width), bool)
        self.col = 0

    def const(self, data: bytes):
        c = self.col
        self.bytes[:, c:c + len(data)] = np.frombuffer(data, np.uint8)
        self.mask[:, c:c + len(data)] = True
        self.col += len(data)

    def varints(self, values: np.ndarray, lengths: np.ndarray, width: int):
        """Per-row varints: values [R] or [R, T]; each takes `width` slots per value."""
        values = values.reshape(values.shape[0], -1)
        lengths = lengths.reshape(values.shape)
        num_rows, count = values.shape
        c = self.col
        block = self.bytes[:, c:c + count * width].reshape(num_rows, count, width)
        mblock = self.mask[:, c:c + count * width].reshape(num_rows, count, width)
        dtype = values.dtype.type
        for k in range(width):
            byte = (values >> dtype(7 * k)) & dtype(0x7F)
            if k + 1 < width:
                byte |= np.where(lengths > k + 1, dtype(0x80), dtype(0))
            block[:, :, k] = byte
            mblock[:, :, k] = lengths > k
        self.col += count * width


def serialize_int64_examples(features: dict):
    """Serializes records with fixed-length int64 features.

    Args:
      features: ordered mapping name -> integer array `[R, T_f]` (one row per record).

    Returns:
      `(buf, offsets)`: uint8 `[total]` and int64 `[R+1]`; record `i` is
      `buf[offsets[i]:offsets[i+1]]`, a serialized `tf.train.Example`.
    """
    plan, total = [], None
    for key, arr in features.items():
        key = key.encode("utf-8")
        vals = _as_unsigned(arr)
        nb = varint_lengths(vals)
        packed = nb.sum(axis=1, dtype=np.int64)
        llist = 1 + varint_lengths(packed) + packed
        lfeat = 1 + varint_lengths(lfeat_in := llist) + lfeat_in
        lentry = 3 + len(key) + varint_lengths(lfeat) + lfeat
        feat_total = 1 + varint_lengths(lentry) + lentry
        total = feat_total if total is None else total + feat_total
        plan.append((key, vals, nb, packed, llist, lfeat, lentry))
    num_rows = total.shape[0]
    scalar_width = 5  # lengths < 2**35

    width = 1 + scalar_width
    for key, vals, nb, *_ in plan:
        width += 1 + scalar_width + 3 + len(key) + 3 * scalar_width + 2 + vals.shape[1] * int(nb.max(initial=1))
    rows = _Rows(num_rows, width)

    def scalar(values):
        values = values.astype(np.uint64)
        rows.varints(values, varint_lengths(values), scalar_width)

    rows.const(b"\x0a")
    scalar(total)
    for key, vals, nb, packed, llist, lfeat, lentry in plan:
        rows.const(b"\x0a")
        scalar(lentry)
        rows.const(b"\x0a" + bytes([len(key)]) + key + b"\x12")
        scalar(lfeat)
        rows.const(b"\x1a")
        scalar(llist)
        rows.const(b"\x0a")
        scalar(packed)
        rows.varints(vals, nb, int(nb.max(initial=1)))
    assert rows.col == width, (rows.col, width)
    rec_len = rows.mask.sum(axis=1, dtype=np.int64)
    offsets = np.zeros(num_rows + 1, np.int64)
    np.cumsum(rec_len, out=offsets[1:])
    buf = rows.bytes[rows.mask]
    return buf, offsets


def encode_varint_stream(values: np.ndarray):
    """Varint-encodes a flat integer array: `(data, offsets)` with `data` bytes and
    `offsets` int64 `[n+1]`; value `i` is `data[offsets[i]:offsets[i+1]]`."""
    vals = _as_unsigned(np.ascontiguousarray(values).reshape(-1))
    nb = varint_lengths(vals)
    width = int(nb.max(initial=1))
    offsets = np.zeros(vals.size + 1, np.int64)
    np.cumsum(nb, out=offsets[1:])
    if width == 1:
        return vals.astype(np.uint8).tobytes(), offsets
    dtype = vals.dtype.type
    out = np.empty(int(offsets[-1]), np.uint8)
    starts = offsets[:-1]
    for k in range(width):  # byte k of every value that has more than k bytes
        sel = None if k == 0 else np.flatnonzero(nb > k)
        v = vals if sel is None else vals[sel]
        byte = (v >> dtype(7 * k)) & dtype(0x7F)
        if k + 1 < width:
            more = nb > k + 1 if sel is None else nb[sel] > k + 1
            byte |= more.astype(vals.dtype) << dtype(7)
        out[starts + k if sel is None else starts[sel] + k] = byte
    return out.tobytes(), offsets


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class WindowRecordEncoder:
    """Serializes `{"inputs": row[a:a+T], "labels": row[a+1:a+T+1]}` Examples from a varint-
    encoded stream: each token is encoded once, and a record is two headers plus two byte slices
    of the encoded stream (inputs and labels overlap in all but one token). Headers are memoized
    by payload length. The bytes equal `serialize_int64_examples` (a test checks it).

    Args:
      data, offsets: `encode_varint_stream` of the flattened stream rows.
    """

    def __init__(self, data: bytes, offsets: np.ndarray):
        self.data = data
        self.offsets = offsets
        self._feature_headers = {}
        self._example_headers = {}

    def _feature(self, key: bytes, packed: int):
        cached = self._feature_headers.get((key, packed))
        if cached is None:
            llist = 1 + len(_varint_bytes(packed)) + packed
            lfeat = 1 + len(_varint_bytes(llist)) + llist
            lentry = 3 + len(key) + len(_varint_bytes(lfeat)) + lfeat
            header = (b"\x0a" + _varint_bytes(lentry) + b"\x0a" + bytes([len(key)]) + key + b"\x12"
                      + _varint_bytes(lfeat) + b"\x1a" + _varint_bytes(llist) + b"\x0a"
                      + _varint_bytes(packed))
            cached = (header, 1 + len(_varint_bytes(lentry)) + lentry)
            self._feature_headers[(key, packed)] = cached
        return cached

    def _example(self, p_in: int, p_lab: int):
        cached = self._example_headers.get((p_in, p_lab))
        if cached is None:
            h_in, t_in = self._feature(b"inputs", p_in)
            h_lab, t_lab = self._feature(b"labels", p_lab)
            cached = (b"\x0a" + _varint_bytes(t_in + t_lab) + h_in, h_lab)
            self._example_headers[(p_in, p_lab)] = cached
        return cached

    def records(self, starts, tgt_len: int):
        """Yields serialized Examples for windows starting at flat token indices `starts`."""
        offsets = self.offsets
        a = offsets[starts].tolist()
        b = offsets[np.asarray(starts) + 1].tolist()
        c = offsets[np.asarray(starts) + tgt_len].tolist()
        d = offsets[np.asarray(starts) + tgt_len + 1].tolist()
        data, example = self.data, self._example
        for a0, b0, c0, d0 in zip(a, b, c, d):
            head, mid = example(c0 - a0, d0 - b0)
            yield b"".join((head, data[a0:c0], mid, data[b0:d0]))
