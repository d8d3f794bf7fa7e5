"""Compare txl-tf with the real Hugging Face `TransfoXLLMHeadModel` on the same random weights.

Run it with a Python that has `torch` and `transformers==4.30.2` (a separate environment: the
project itself never needs torch):

  python3 -m venv /work/hfenv && /work/hfenv/bin/pip install torch transformers==4.30.2
  /work/hfenv/bin/python runners/tools/check_huggingface_parity.py --project_python=.venv/bin/python

For each configuration it builds a random `TransfoXLLMHeadModel` (every parameter random,
including LayerNorm, cluster weights and u/v), saves it with `save_pretrained`
(`pytorch_model.bin` or `model.safetensors`), imports the directory with
`runners/import_weights.py` under the project's Python, runs both models over several segments
carrying memory (Hugging Face from `mems=None`, i.e. zero memories; txl-tf from `init_mems`), and
prints the largest differences of the log-probabilities and of the new memories. It exits non-zero
when a relative difference exceeds --tolerance.

`--mode=txl` is the half that runs inside the project environment (called by the script itself).
Each half imports its own framework inside the functions that run in its environment (torch and
transformers on one side, TensorFlow and txl_tf on the other), so either environment can load
this file.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name: (TransfoXLConfig fields, unused, import_weights extra flags)
CONFIGS = {
    "div2_cutoffs_tied_untie_r_clamp": (
        dict(vocab_size=120, cutoffs=[30, 70], d_model=32, d_embed=32, n_head=4, d_head=8,
             d_inner=64, div_val=2, n_layer=3, mem_len=10, clamp_len=6, same_length=False,
             proj_share_all_but_first=True, untie_r=True), "bin", []),
    "div1_no_cutoffs_shared_uv_enwik8": (
        dict(vocab_size=60, cutoffs=[], d_model=32, d_embed=32, n_head=4, d_head=8,
             d_inner=64, div_val=1, n_layer=2, mem_len=8, clamp_len=-1, same_length=False,
             proj_share_all_but_first=False, untie_r=False), "safetensors", []),
    "div1_cutoffs_projected_pre_lnorm": (
        dict(vocab_size=100, cutoffs=[40], d_model=32, d_embed=24, n_head=2, d_head=16,
             d_inner=48, div_val=1, n_layer=2, mem_len=7, clamp_len=3, same_length=False,
             proj_share_all_but_first=True, untie_r=True, pre_lnorm=True), "bin", []),
    "div4_same_length_hf_semantics": (
        dict(vocab_size=120, cutoffs=[30, 70], d_model=32, d_embed=32, n_head=4, d_head=8,
             d_inner=64, div_val=4, n_layer=2, mem_len=9, clamp_len=5, same_length=True,
             proj_share_all_but_first=True, untie_r=True),
        "bin", ["--same_length_semantics=huggingface"]),
}


def _check_pytorch_bin_reader(safetensors_dir, bin_dir, name):
    sys.path.insert(0, REPO)  # the torch environment does not have this repository installed
    from txl_tf.convert import huggingface

    st, _ = huggingface.read_weights(safetensors_dir)
    pt, file_name = huggingface.read_weights(bin_dir)
    assert file_name == "pytorch_model.bin", file_name
    common = sorted(set(st.names) & set(pt.names))
    for key in common:
        if not np.array_equal(st.peek(key), pt.peek(key)):
            raise SystemExit(f"{name}: {key} differs between pytorch_model.bin and safetensors")
    only = sorted(set(st.names) ^ set(pt.names))
    print(f"     {name}: pytorch_model.bin and model.safetensors agree on {len(common)} "
          f"tensors" + (f"; only in one of them (tied duplicates): {only}" if only else ""))


def _hf_side(args):
    if args.work_dir is None:
        with tempfile.TemporaryDirectory(prefix="hfparity-") as work_dir:
            args.work_dir = work_dir
            return _compare_all(args)
    return _compare_all(args)


def _random_hf_model(fields, index):
    """A `TransfoXLLMHeadModel` with every parameter random (LayerNorm, clusters, u/v too)."""
    import torch
    from transformers import TransfoXLConfig, TransfoXLLMHeadModel

    torch.manual_seed(index)
    model = TransfoXLLMHeadModel(TransfoXLConfig(dropout=0.0, dropatt=0.0, **fields)).eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "layer_norm.weight" in pname:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif p.dim() >= 2 and "bias" not in pname:
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
            else:
                p.copy_(0.3 * torch.randn_like(p))
    return model


def _hf_outputs(model, tokens, qlen, segments):
    """Hugging Face's log-probabilities and memories [L, B, M, D] per segment, from mems=None."""
    import torch

    logp, memories, mems = [], [], None
    with torch.no_grad():
        for s in range(segments):
            out = model(input_ids=torch.tensor(tokens[:, s * qlen:(s + 1) * qlen]), mems=mems)
            mems = out.mems
            logp.append(out.prediction_scores.numpy())
            memories.append(np.stack([m.numpy().transpose(1, 0, 2) for m in mems]))
    return logp, memories


def _txl_outputs(args, work, hf_dir, tokens, qlen, flags):
    """Imports `hf_dir` and runs txl-tf on `tokens`, both in the project's Python."""
    model_dir = os.path.join(work, "txl")
    subprocess.run([args.project_python, os.path.join(REPO, "runners", "import_weights.py"),
                    "--source=huggingface", f"--input_dir={hf_dir}",
                    f"--model_dir={model_dir}", f"--tgt_len={qlen}", *flags],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    data = os.path.join(work, "tokens.npz")
    np.savez(data, tokens=tokens, qlen=qlen, segments=args.segments)
    subprocess.run([args.project_python, os.path.abspath(__file__), "--mode=txl",
                    f"--model_dir={model_dir}", f"--data={data}"], check=True, cwd=REPO)
    return np.load(os.path.join(work, "txl_out.npz"))


def _differences(name, txl, hf_logp, hf_mems, segments, hf_semantics):
    """Largest absolute and relative differences of the log-probabilities and memories."""
    logp_abs = logp_rel = mem_abs = mem_rel = 0.0
    for s in range(segments):
        a, b = txl[f"logp_{s}"], hf_logp[s]
        logp_abs = max(logp_abs, float(np.max(np.abs(a - b))))
        logp_rel = max(logp_rel, float(np.max(np.abs(a - b)) / np.max(np.abs(b))))
        tm, hm = txl[f"mems_{s}"], hf_mems[s]
        if hf_semantics:  # txl-tf keeps mem_len - 1 states: the newest of Hugging Face's
            hm = hm[:, :, 1:]
        if tm.shape != hm.shape:
            raise SystemExit(f"{name}: memory shapes differ: txl {tm.shape}, HF {hm.shape}")
        mem_abs = max(mem_abs, float(np.max(np.abs(tm - hm))))
        mem_rel = max(mem_rel, float(np.max(np.abs(tm - hm)) / np.max(np.abs(hm))))
    return dict(log_prob_max_abs=logp_abs, log_prob_max_rel=logp_rel, mems_max_abs=mem_abs,
                mems_max_rel=mem_rel)


def _compare_one(args, index, name, fields, flags):
    """The differences of one configuration."""
    model = _random_hf_model(fields, index)
    work = tempfile.mkdtemp(prefix=f"hfparity-{name}-", dir=args.work_dir)
    hf_dir, bin_dir = os.path.join(work, "hf"), os.path.join(work, "hf_bin")
    # The project environment has no torch, so it imports the safetensors written by
    # save_pretrained; the pickle file is read here, in the torch environment, by the
    # importer's own reader and must give the same tensors.
    model.save_pretrained(hf_dir, safe_serialization=True)
    model.save_pretrained(bin_dir, safe_serialization=False)
    _check_pytorch_bin_reader(hf_dir, bin_dir, name)
    batch, qlen = 3, 5
    tokens = np.random.default_rng(index).integers(0, fields["vocab_size"],
                                                   size=(batch, qlen * args.segments))
    hf_logp, hf_mems = _hf_outputs(model, tokens, qlen, args.segments)
    txl = _txl_outputs(args, work, hf_dir, tokens, qlen, flags)
    return _differences(name, txl, hf_logp, hf_mems, args.segments,
                        "--same_length_semantics=huggingface" in flags)


def _compare_all(args):
    worst, failed = {}, False
    for index, (name, (fields, _, flags)) in enumerate(CONFIGS.items()):
        worst[name] = w = _compare_one(args, index, name, fields, flags)
        ok = max(w["log_prob_max_rel"], w["mems_max_rel"]) <= args.tolerance
        failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({args.segments} segments): "
              f"log-prob max abs {w['log_prob_max_abs']:.2e} rel {w['log_prob_max_rel']:.2e}; "
              f"memory max abs {w['mems_max_abs']:.2e} rel {w['mems_max_rel']:.2e}", flush=True)
    largest = max(max(w["log_prob_max_abs"], w["mems_max_abs"]) for w in worst.values())
    print(f"largest absolute difference over all cases: {largest:.3e}")
    if args.report:
        if REPO not in sys.path:  # this half runs in the Hugging Face environment
            sys.path.insert(0, REPO)
        from txl_tf.storage.atomic_writes import write_json_atomic  # TensorFlow-free
        write_json_atomic(args.report, worst)
    return 1 if failed else 0


def _txl_side(args):
    import tensorflow as tf

    import txl_tf

    model = txl_tf.load_model(args.model_dir)
    data = np.load(args.data)
    tokens, qlen, segments = data["tokens"], int(data["qlen"]), int(data["segments"])
    mems = model.init_mems(tokens.shape[0])
    out = {}
    for s in range(segments):
        result = model(tf.constant(tokens[:, s * qlen:(s + 1) * qlen]), mems=mems)
        mems = result["mems"]
        out[f"logp_{s}"] = result["log_probs"].numpy()
        out[f"mems_{s}"] = np.stack([m.numpy() for m in mems])
    np.savez(os.path.join(os.path.dirname(args.data), "txl_out.npz"), **out)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["huggingface", "txl"], default="huggingface")
    parser.add_argument("--project_python", default=os.path.join(REPO, ".venv", "bin", "python"),
                        help="Python of the txl-tf environment (TensorFlow, this repository).")
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("--work_dir", default=None,
                        help="Keep the directories here (default: a temporary one, removed).")
    parser.add_argument("--report", default=None, help="Write the differences as JSON here.")
    parser.add_argument("--model_dir")
    parser.add_argument("--data")
    args = parser.parse_args()
    return _txl_side(args) if args.mode == "txl" else _hf_side(args)


if __name__ == "__main__":
    sys.exit(main())
