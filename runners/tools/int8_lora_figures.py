r"""The figures of docs/keras.md "int8 and LoRA", measured in one run on the machine at hand.

  * the share of parameters `quantize("int8")` covers and the weights' bytes, for the default
    model (runners/default.flags) and the enwik8_base shape (built, not trained);
  * a small byte-level model trained with `fit` on corpus A (the first 400 KB of the builtin
    corpus: Python's standard library) and scored on A and on corpus B
    (/usr/share/common-licenses): held-out loss in float32 and int8, evaluation and generation tokens/s of both (interleaved);
  * the SavedModels of both (`export`): sizes, and the latency of `score` through TF's
    session-based loader (TF Serving's), in a child process;
  * LoRA rank 8 on the A model, fine-tuned on B: held-out loss on B before and after, the share
    of weights trained.

Prints one line `FIGURES_JSON {...}`. Usage (about 5 minutes on 2 CPU cores):
  python runners/tools/int8_lora_figures.py [--steps=600] [--lora_steps=300]
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

STEPS = 600
LORA_STEPS = 300
SMALL = dict(n_token=256, n_layer=2, d_model=64, n_head=4, d_head=16, d_inner=256, tgt_len=32,
             mem_len=32, dropout=0.0, dropatt=0.0)
SHAPES = {"default": dict(n_token=204, n_layer=4, d_model=128, n_head=4, d_head=32, d_inner=512,
                          tgt_len=64, mem_len=64),
          "enwik8_base": dict(n_token=204, n_layer=12, d_model=512, n_head=8, d_head=64,
                              d_inner=2048, tgt_len=512, mem_len=512)}
LATENCY = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import tensorflow as tf
    paths, n_layer, mem_len, d_model = json.loads(sys.argv[1])
    feeds = {"tokens": np.ones([1, 32], np.int32),
             "mems": np.zeros([1, n_layer, mem_len, d_model], np.float32)}
    runs = {}
    for tag, path in paths.items():
        sess = tf.compat.v1.Session(graph=tf.Graph())
        sig = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path).signature_def["score"]
        fetch = {k: v.name for k, v in sig.outputs.items()}
        feed = {sig.inputs[k].name: v for k, v in feeds.items()}
        runs[tag] = lambda sess=sess, fetch=fetch, feed=feed: sess.run(fetch, feed)
        for _ in range(3):
            runs[tag]()
    times = {tag: [] for tag in runs}
    for _ in range(5):  # interleaved rounds of 10 calls
        for tag, call in runs.items():
            start = time.perf_counter()
            for _ in range(10):
                call()
            times[tag].append((time.perf_counter() - start) / 10 * 1000)
    print(json.dumps({tag: float(np.median(t)) for tag, t in times.items()}))
""")


def _split(tokens, share=0.9):
    n = int(len(tokens) * share)
    return tokens[:n], tokens[n:n + 20_000]


def main(argv):
    steps = int(next((a.split("=")[1] for a in argv if a.startswith("--steps=")), STEPS))
    lora_steps = int(next((a.split("=")[1] for a in argv if a.startswith("--lora_steps=")),
                          LORA_STEPS))
    import keras  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    import tf_records  # pylint: disable=import-outside-toplevel
    import txl_tf  # pylint: disable=import-outside-toplevel
    from tf_records.corpora.builtin import stdlib_bytes  # pylint: disable=import-outside-toplevel
    from txl_tf.model.lora import trainable_share  # pylint: disable=import-outside-toplevel
    from txl_tf.model.quantization import quantized_share  # pylint: disable=import-outside-toplevel

    figures = {"shapes": {}}
    for name, shape in SHAPES.items():
        model = txl_tf.TransformerXL(txl_tf.TransformerXLConfig(**shape))
        before = quantized_share(model)
        model.quantize("int8")
        after = quantized_share(model)
        figures["shapes"][name] = dict(parameters=before["parameters"], share=after["share"],
                                       float32_bytes=before["bytes"], int8_bytes=after["bytes"])
        del model
    a_train, a_test = _split(np.asarray(stdlib_bytes(400_000)[0], np.int32))
    licenses = b"".join(open(p, "rb").read() for p in sorted(glob.glob(
        "/usr/share/common-licenses/*")) if os.path.isfile(p))
    b_train, b_test = _split(np.frombuffer(licenses, np.uint8).astype(np.int32))
    figures["corpora_bytes"] = {"A": len(a_train) + len(a_test), "B": len(b_train) + len(b_test)}

    def data(tokens, batch=16):
        return tf_records.dataset_from_tokens(tokens, per_replica_batch=batch, tgt_len=32)

    def held_out(lm, tokens):
        return float(lm.evaluate(data(tokens, 8), verbose=0, return_dict=True)["loss"])

    def speed(lm):
        lm.evaluate(data(a_test, 8), verbose=0)  # traced once
        start = time.perf_counter()
        lm.evaluate(data(a_test, 8), verbose=0)
        evaluation = (len(a_test) // (8 * 32)) * 8 * 32 / (time.perf_counter() - start)
        prompt = tf.constant(a_test[:64].reshape(2, 32))
        lm.generate(prompt, max_length=40, seed=1)
        start = time.perf_counter()
        lm.generate(prompt, max_length=32 + 128, seed=1)
        return evaluation, 2 * 128 / (time.perf_counter() - start)

    keras.utils.set_random_seed(0)
    root = tempfile.mkdtemp(prefix="int8-lora-")
    lm = txl_tf.TransformerXLCausalLM(txl_tf.TransformerXL(txl_tf.TransformerXLConfig(**SMALL)))
    lm.compile(optimizer=keras.optimizers.Adam(2e-3))
    lm.fit(data(a_train).take(steps), epochs=1, verbose=0)
    preset = os.path.join(root, "float")
    lm.save_to_preset(preset)
    q = txl_tf.TransformerXLCausalLM.from_preset(preset)
    q.compile(optimizer="adam")
    q.quantize("int8")
    rows = {}
    for tag, model in (("float32", lm), ("int8", q), ("float32_again", lm)):
        evaluation, generation = speed(model)
        rows[tag] = dict(loss_A=held_out(model, a_test), loss_B=held_out(model, b_test),
                         eval_tokens_per_s=evaluation, generate_tokens_per_s=generation)
    figures["trained"] = rows
    paths = {}
    for tag, model in (("float32", lm), ("int8", q)):
        path = model.export_for_serving(os.path.join(root, "export-" + tag), mem_len=32,
                                        warmup_requests=1)["export_path"]
        paths[tag] = path
        for key, folder in (("saved_model_bytes", path),
                            ("variables_bytes", os.path.join(path, "variables"))):
            figures.setdefault(key, {})[tag] = sum(
                os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)
    child = subprocess.run([sys.executable, "-c", LATENCY, json.dumps(
        [paths, SMALL["n_layer"], SMALL["mem_len"], SMALL["d_model"]])],
        capture_output=True, text=True, check=True)
    figures["score_latency_ms"] = json.loads(child.stdout.strip().splitlines()[-1])
    tuned = txl_tf.TransformerXLCausalLM.from_preset(preset)
    tuned.compile(optimizer="adam")
    before = held_out(tuned, b_test)
    adapted = tuned.enable_lora(8)
    tuned.compile(optimizer=keras.optimizers.Adam(2e-3))
    start = time.perf_counter()
    tuned.fit(data(b_train).take(lora_steps), epochs=1, verbose=0)
    figures["lora"] = dict(adapted=adapted, trained_share=trainable_share(tuned.backbone),
                           loss_B_before=before, loss_B_after=held_out(tuned, b_test),
                           loss_A_after=held_out(tuned, a_test),
                           fit_seconds=time.perf_counter() - start, steps=lora_steps)
    print("FIGURES_JSON " + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
