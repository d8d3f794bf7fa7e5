"""Read a Keras 2 `tf_model.h5` weight file of Hugging Face `TFTransfoXLLMHeadModel`.

The file holds one HDF5 dataset per variable, e.g.
`/transformer/tf_transfo_xl_lm_head_model/transformer/layers_._0/dec_attn/qkv_net/kernel:0`.
`read_as_pytorch_names` returns the same tensors under the Hugging Face PyTorch names and in the
PyTorch orientation (Dense kernels and projections transposed), so that one mapping
(`huggingface.py`) serves `.safetensors`, `pytorch_model.bin` and `.h5` alike.
"""
import os
import re

import numpy as np

from txl_tf.convert.errors import WeightImportError
from untrusted_files import reading

MAX_HDF5_BYTES = reading.MAX_WEIGHTS_BYTES


def read_datasets(path):
    """{variable name starting at `transformer/` or `crit/` (no `:0`): numpy array}."""
    import h5py

    out = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            full = "/" + name
            full = full[:-2] if full.endswith(":0") else full
            cut = max(full.rfind("/transformer/"), full.rfind("/crit/"))
            if cut < 0:
                raise WeightImportError(f"{path}: dataset {full!r} is neither under transformer/ "
                                        "nor crit/; not a TFTransfoXLLMHeadModel weight file.")
            key = full[cut + 1:]
            if key in out:
                raise WeightImportError(f"{path}: variable {key!r} appears twice.")
            out[key] = np.asarray(item[()])

    os.close(reading.open_checked(path, max_bytes=MAX_HDF5_BYTES, error=WeightImportError))
    try:
        f = h5py.File(path, "r")
    except OSError as error:
        raise WeightImportError(f"{path} is not a readable HDF5 file ({error}); it must be the "
                                "tf_model.h5 of a Hugging Face TFTransfoXLLMHeadModel.") from None
    with f:
        f.visititems(visit)
    return out


def tf_to_pytorch_name(name):
    """(PyTorch name, transpose?) of a TF Hugging Face variable name."""
    pt = name.replace("_._", ".").replace("/", ".")
    transpose = False
    if pt.endswith(".kernel"):
        pt, transpose = pt[:-len(".kernel")] + ".weight", True
    elif pt.endswith(".gamma"):
        pt = pt[:-len(".gamma")] + ".weight"
    elif pt.endswith(".beta"):
        pt = pt[:-len(".beta")] + ".bias"
    elif pt.endswith(".embeddings"):
        pt = pt[:-len(".embeddings")] + ".weight"
    if re.search(r"\.(emb_projs|out_projs)\.\d+$", pt):
        transpose = True  # TF [d_i, d_model], PyTorch [d_model, d_i]
    return pt, transpose


def read_as_pytorch_names(path):
    out = {}
    for name, array in read_datasets(path).items():
        pt, transpose = tf_to_pytorch_name(name)
        out[pt] = array.T if transpose else array
    return out
