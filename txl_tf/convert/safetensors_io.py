"""A dependency-free reader and writer of the `.safetensors` format (NumPy arrays only).

Layout: an 8-byte little-endian header length N, N bytes of JSON
({name: {"dtype", "shape", "data_offsets": [begin, end]}, optional "__metadata__"}), then the
raw little-endian tensor bytes, offsets relative to the end of the header. No code is executed
while reading, unlike pickle-based `pytorch_model.bin`.
"""
import json
import os
import struct
import tempfile

import numpy as np

from txl_tf.convert.errors import WeightImportError
from untrusted_files import reading

MAX_SAFETENSORS_BYTES = reading.MAX_WEIGHTS_BYTES

_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
    "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def read(path):
    """{name: numpy array} of a `.safetensors` file (BF16 is widened to float32)."""
    data = reading.read_bytes(path, max_bytes=MAX_SAFETENSORS_BYTES, error=WeightImportError)
    if len(data) < 8:
        raise WeightImportError(f"{path} is too short to be a safetensors file.")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise WeightImportError(f"{path}: header length {size} exceeds the file size; the file "
                                "is truncated or not a safetensors file.")
    header = reading.parse_json(
        reading.decode_utf8(bytes(data[8:8 + size]), f"{path}'s safetensors header",
                            WeightImportError),
        f"{path}'s safetensors header", WeightImportError,
        fix="give a .safetensors file of the source model")
    if not isinstance(header, dict):
        raise WeightImportError(f"{path}: the safetensors header is not a JSON object.")
    body = memoryview(data)[8 + size:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, (begin, end) = _entry(path, name, entry)
        if not 0 <= begin <= end <= len(body):
            raise WeightImportError(f"{path}: tensor {name!r} lies outside the file.")
        raw = body[begin:end]
        if dtype == "BF16":
            bits = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        elif dtype in _DTYPES:
            array = np.frombuffer(raw, np.dtype(_DTYPES[dtype]).newbyteorder("<"))
        else:
            raise WeightImportError(f"{path}: tensor {name!r} has unsupported dtype {dtype}.")
        if array.size != int(np.prod(shape, dtype=np.int64)):
            raise WeightImportError(f"{path}: tensor {name!r} has {array.size} values for shape "
                                    f"{list(shape)}.")
        out[name] = array.reshape(shape).copy()
    return out


def _entry(path, name, entry):
    """(dtype, shape, (begin, end)) of one header entry, checked."""
    try:
        dtype, shape = str(entry["dtype"]), tuple(int(d) for d in entry["shape"])
        begin, end = (int(o) for o in entry["data_offsets"])
    except (TypeError, KeyError, ValueError):
        raise WeightImportError(f"{path}: header entry {name!r} is not a safetensors tensor "
                                "(dtype, shape, data_offsets); the file is damaged or foreign.") \
            from None
    if any(d < 0 for d in shape):
        raise WeightImportError(f"{path}: tensor {name!r} has a negative dimension.")
    return dtype, shape, (begin, end)


def write(path, arrays, metadata=None):
    """Write {name: numpy array} as a `.safetensors` file (atomically)."""
    header, chunks, offset = {}, [], 0
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        if array.dtype not in _NAMES:
            raise WeightImportError(f"cannot write dtype {array.dtype} of {name!r}.")
        raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _NAMES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; the file is for others too
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for raw in chunks:
                f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
