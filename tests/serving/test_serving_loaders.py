"""The exported SavedModel through the loaders its users have, in fresh processes.

* TF1's session-based loader (`tf.compat.v1.saved_model.loader.load` + `Session.run` of the
  SignatureDef's tensor names), as TF Serving's C++ LoadSavedModel runs a SavedModel: the id
  signatures with TensorFlow alone, the text ones after `import tensorflow_text`;
* `saved_model_cli run` (for the text signatures, the same CLI with the TF Text ops registered);
* `tf.saved_model.load`.
Every signature gives the Keras model's outputs (<= 1e-5) through the session loader and
`tf.saved_model.load`; `saved_model_cli` (the session loader behind a command line) runs the
requests that use its own inputs and outputs (`CLI_REQUESTS`). The bad requests (ids, memory
shapes, batch-major rows, limits and per-request budgets, sampling settings, empty inputs,
unknown words) through the session loader (those of an id signature in the process of
TensorFlow alone, which sets those signatures up anyway; those of a text signature with
tensorflow_text) and through `tf.saved_model.load` (with tensorflow_text); and the bad
invocations of runners/export.py.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from tf_records import dataset_from_tokens
from txl_tf.model.context_settings import ContextSettings
from txl_tf.inference import evaluation
from txl_tf.generation.generator import Generator
from tf_records.text.tokenize import decode_ids, encode_text

from runner_calls import call_runner
from saved_model_calls import SUPPORT
from shared_dirs import read_only_dir, writable_copy
from tiny import TINY_MODEL
from word_export import LIMITS, MEM_LEN, N_TOKEN, RULES, vocabulary, word_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPORT = os.path.join(REPO, "runners", "export.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
           PYTHONPATH=os.pathsep.join([REPO, SUPPORT]))
N_LAYER, D_MODEL = TINY_MODEL["n_layer"], TINY_MODEL["d_model"]
RUN = dict(mem_len=MEM_LEN, clamp_len=5, same_length=True)
TEXTS = ["w1 w2\nw3", "w4 w5 w6 w7 w8 w9 w1"]
SCORE_TEXT = "w1 w2 w3 w4 w5\nw6 w7 w8 w9 w10 w1 w2\nw3\n"


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=600, **kw)


@pytest.fixture(scope="module")
def served(word_export):
    """The shared tiny word-level model directory, its export by runners/export.py (with
    LIMITS; tests/support/word_export.py) and its ids export (--notext_signatures)."""
    assert "INFO" not in word_export["stderr"]  # absl's INFO log is off by default
    return dict(model_dir=word_export["model"],
                model=word_model(), vocab=vocabulary(), path=word_export["full"],
                ids=word_export["ids"], info=word_export["info"])


def test_each_weight_is_saved_once(served):
    """The SavedModel's checkpoint holds exactly the tf.Variables the signatures read, one per
    Keras weight (no second copy that the restore op would fill instead)."""
    saved = dict(tf.train.list_variables(os.path.join(served["path"], "variables",
                                                      "variables")))
    saved.pop("_CHECKPOINTABLE_OBJECT_GRAPH")
    assert all(k.startswith("weights/") for k in saved), sorted(saved)
    assert any(k.startswith("weights/transformer_xl.Sr_r_bias/") for k in saved), sorted(saved)
    assert sorted(map(tuple, saved.values())) == sorted(
        tuple(v.shape) for v in served["model"].variables)


def test_the_limits_are_recorded_in_the_export(served):
    path = os.path.join(served["path"], "assets.extra", "txl_export.json")
    with open(path) as f:
        recorded = json.load(f)
    assert recorded["limits"] == LIMITS == served["info"]["limits"]
    assert recorded["signatures"] == served["info"]["signatures"]


def requests():
    """(name, signature, inputs) of every signature; "@name.key" is an output of an earlier
    request. generate is greedy or seeded, hence deterministic."""
    rng = np.random.RandomState(0)
    i32, f32 = np.int32, np.float32

    def rows(num_tokens, temperature=0.0, top_k=0, top_p=1.0, seed=0, batch=2):
        return dict(num_tokens=np.full([batch], num_tokens, i32),
                    temperature=np.full([batch], temperature, f32),
                    top_k=np.full([batch], top_k, i32), top_p=np.full([batch], top_p, f32),
                    seed=np.full([batch], seed, np.int64))

    ids = [
        ("init", "init_mems", dict(streams=np.zeros([2], i32))),
        ("score", "score", dict(tokens=rng.randint(0, N_TOKEN, (2, 5)).astype(i32),
                                mems="@init.mems")),
        ("score2", "score", dict(tokens=rng.randint(0, N_TOKEN, (2, 3)).astype(i32),
                                 mems="@score.mems")),
        ("default", "serving_default", dict(tokens=rng.randint(0, N_TOKEN, (2, 4)).astype(i32),
                                            mems=np.zeros([2, N_LAYER, MEM_LEN, D_MODEL], f32))),
        ("nll", "nll", dict(tokens=rng.randint(0, N_TOKEN, (2, 5)).astype(i32),
                            labels=rng.randint(0, N_TOKEN, (2, 5)).astype(i32),
                            mems=np.zeros([2, N_LAYER, MEM_LEN, D_MODEL], f32))),
        ("greedy", "generate", dict(prompt=rng.randint(0, N_TOKEN, (2, 7)).astype(i32),
                                    **rows(9))),
        ("sampled", "generate", dict(prompt=rng.randint(0, N_TOKEN, (2, 7)).astype(i32),
                                     **rows(9, 1.2, 6, 0.9, 5))),
    ]
    text = [
        ("gen_text", "generate_text", dict(text=np.array(TEXTS, "S"), **rows(7))),
        ("score_text", "score_text", dict(text=np.array([SCORE_TEXT], "S"))),
    ]
    return ids, text


LOADER = textwrap.dedent("""
    import contextlib, io, json, sys
    import numpy as np
    import tensorflow as tf
    from saved_model_calls import SavedModelCalls
    kind, output, jobs, commands = sys.argv[1], sys.argv[2], *map(json.loads, sys.argv[3:5])
    if kind == "text":
        import tensorflow_text  # noqa: F401
    saved = {}
    for tag, (loader, path, inputs) in jobs.items():
        inputs = np.load(inputs)
        requests = {}
        for key in inputs.files:
            name, signature, arg = key.split(".")
            requests.setdefault((name, signature), {})[arg] = inputs[key]
        out = {}

        def resolve(value):
            if value.dtype.kind == "U" and str(value).startswith("@"):
                return out[str(value)[1:]]
            return value

        call = SavedModelCalls(path, loader)
        out["loaded.signatures"] = np.array(call.names())
        if loader != "session" and hasattr(call.loaded, "vocab_file"):
            with open(call.loaded.vocab_file.asset_path.numpy().decode()) as f:
                out["loaded.vocab_file"] = np.array(f.read())
        for (name, signature), feeds in requests.items():
            try:
                result = call(signature, {k: resolve(v) for k, v in feeds.items()})
            except tf.errors.InvalidArgumentError as error:
                if not name.startswith("bad_"):
                    raise
                out[f"{name}.error"] = np.array(error.message)
                continue
            for k, v in result.items():
                out[f"{name}.{k}"] = v.astype("S") if v.dtype == object else v  # no pickle
        saved.update({f"{tag}/{key}": value for key, value in out.items()})
    # saved_model_cli: its main, as its console script calls it, once per command
    from tensorflow.python.tools.saved_model_cli import main
    printed = []
    for argv in commands:
        sys.argv = ["saved_model_cli"] + argv
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            try:
                code = main()
            except SystemExit as exit:
                code = exit.code
        printed.append([code or 0, stdout.getvalue()])
    assert ("tensorflow_text" in sys.modules) == (kind == "text")
    np.savez(output, **saved)
    with open(output + ".json", "w") as f:
        json.dump(printed, f)
""")


def save_requests(path, reqs):
    """Requests into one .npz (key name.signature.input; strings as fixed-width bytes)."""
    arrays = {f"{n}.{s}.{k}": np.asarray(v) for n, s, feeds in reqs for k, v in feeds.items()}
    np.savez(path, **arrays)


def cli_run_commands(root, path, reqs):
    """The `saved_model_cli run` command (its arguments) of every request, its files in
    `root`: arrays through --inputs (.npy files), the memory of a previous call through its
    --outdir .npy file."""
    root.mkdir(exist_ok=True)
    commands = []
    for name, signature, feeds in reqs:
        inputs = []
        for key, value in feeds.items():
            if isinstance(value, str):  # "@request.output"
                request, output = value[1:].split(".")
                inputs.append(f"{key}={root / request / output}.npy")
            else:
                np.save(root / f"{name}-{key}.npy", np.asarray(value))
                inputs.append(f"{key}={root / f'{name}-{key}.npy'}")
        commands.append(["run", "--dir", path, "--tag_set", "serve", "--signature_def",
                         signature, "--inputs", ";".join(inputs), "--outdir",
                         str(root / name), "--overwrite"])
    return commands


def cli_outputs(root, reqs, printed):
    """{name.output: array, or the text the CLI printed for a string output} of the commands
    of `cli_run_commands(root, path, reqs)`, from `printed` ([exit code, stdout] of each)."""
    out = {}
    for (name, _, _), (code, stdout) in zip(reqs, printed):
        assert code == 0 and "Result for output key" in stdout, (name, code, stdout)
        for f in os.listdir(root / name):
            try:
                out[f"{name}.{f[:-4]}"] = np.load(root / name / f, allow_pickle=False)
            except ValueError:  # strings: their .npy needs pickle; read what was printed
                out[f"{name}.{f[:-4]}"] = stdout.split(
                    f"Result for output key {f[:-4]}:")[1].split("Result for output key")[0]
    return out


def through_loaders(root, kind, jobs, commands=()):
    """Runs {tag: (loader, path, requests)} and the `saved_model_cli` `commands`, all in one
    fresh process that imports tensorflow_text only if `kind` is "text"; its outputs go to
    `root` (`read_loaders`). A request named "bad_..." must fail: its output is "error", the
    message. Each tag's "loaded.signatures" are the names the loader lists; a tf.saved_model.load
    with a vocabulary asset gives "loaded.vocab_file", the text of the file it points to."""
    script = root / f"loader-{kind}.py"
    script.write_text(LOADER)
    for tag, (_, _, reqs) in jobs.items():
        save_requests(root / f"in-{kind}-{tag}.npz", reqs)
    out = root / f"out-{kind}.npz"
    proc = run([sys.executable, str(script), kind, str(out),
                json.dumps({tag: [loader, path, str(root / f"in-{kind}-{tag}.npz")]
                            for tag, (loader, path, _) in jobs.items()}),
                json.dumps(list(commands))], cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]


def read_loaders(root, kind):
    """What `through_loaders(root, kind, ...)` wrote: ({tag: {name.output: array}}, [[exit
    code, stdout] of each `saved_model_cli` command])."""
    out = root / f"out-{kind}.npz"
    saved = np.load(out)
    with open(f"{out}.json") as f:
        printed = json.load(f)
    tags = {key.split("/")[0] for key in saved.files}
    return {tag: {key.split("/", 1)[1]: saved[key] for key in saved.files
                  if key.split("/")[0] == tag} for tag in tags}, printed


def keras_outputs(served, ids_reqs, text_reqs):
    """What the Keras model gives for the same requests."""
    model = served["model"]
    req = {n: feeds for n, _, feeds in ids_reqs + text_reqs}
    out = {"init.mems": np.zeros([2, N_LAYER, MEM_LEN, D_MODEL], np.float32),
           "init.mem_len": [MEM_LEN, MEM_LEN]}
    zeros = model.init_mems(2, MEM_LEN)
    mems = zeros
    for name in ("score", "score2"):
        result = model(req[name]["tokens"], mems=mems, **RUN)
        out[f"{name}.log_probs"] = result["log_probs"].numpy()
        out[f"{name}.mems"] = np.stack(result["mems"], axis=1)
        mems = result["mems"]
    result = model(req["default"]["tokens"], mems=zeros, **RUN)
    out["default.log_probs"] = result["log_probs"].numpy()
    out["default.mems"] = np.stack(result["mems"], axis=1)
    result = model(req["nll"]["tokens"], mems=zeros, labels=req["nll"]["labels"], **RUN)
    out["nll.nll"], out["nll.mems"] = result["nll"].numpy(), np.stack(result["mems"], axis=1)
    gen = Generator(model, mem_len=40, clamp_len=5)
    width = LIMITS["max_num_tokens"]
    for name in ("greedy", "sampled"):
        f = req[name]
        tokens = gen.generate(f["prompt"], int(f["num_tokens"][0]), float(f["temperature"][0]),
                              int(f["top_k"][0]), float(f["top_p"][0]), int(f["seed"][0]))
        out[f"{name}.tokens"] = np.pad(tokens, [[0, 0], [0, width - tokens.shape[1]]],
                                       constant_values=-1)
        out[f"{name}.lengths"] = f["num_tokens"]
    texts, counts = [], []
    for prompt in TEXTS:
        ids = encode_text(prompt, RULES, served["vocab"])[:-1]  # the last line goes on
        new = gen.generate(ids[None], 7, 0.0)[0]
        full = decode_ids(np.concatenate([ids, new]), RULES, served["vocab"])
        texts.append(full[len(decode_ids(ids, RULES, served["vocab"])):].encode())
        counts.append(len(ids))
    out["gen_text.text"], out["gen_text.prompt_tokens"] = np.array(texts, object), counts
    ids = encode_text(SCORE_TEXT, RULES, served["vocab"])
    batches = dataset_from_tokens(ids, 1, 4, last_segment="pad")
    settings = ContextSettings.of_config(model.config, **RUN)
    result = evaluation.Evaluator(model, settings).evaluate(batches, 1, batches.num_steps,
                                                            progress=False)
    out["score_text.loss"], out["score_text.tokens"] = [result.loss], [result.tokens]
    return out


# The requests also sent through `saved_model_cli run`: it loads the SavedModel through the same
# session loader as "session" above, so what it adds is its own way in and out (arrays from .npy
# files, a memory from an earlier call's --outdir, strings in and printed out): one ids request
# that starts from init_mems' output, and generate_text (strings in, strings printed out; its
# number outputs through --outdir as score's). Each command loads the SavedModel once more.
CLI_REQUESTS = ("init", "score", "gen_text")
ID_SIGNATURES = ["generate", "init_mems", "nll", "score", "serving_default"]
TEXT_SIGNATURES = ["generate_text", "score_text"]
ALL_SIGNATURES = sorted(ID_SIGNATURES + TEXT_SIGNATURES)
# Requests the ids export refuses where TensorFlow alone loads it: (name, signature, inputs,
# words of the error).
BAD_IDS = [
    ("bad_mems", "score", dict(tokens=np.ones([2, 5], np.int32),
                               mems=np.zeros([3, N_LAYER, MEM_LEN, D_MODEL], np.float32)),
     "mems must be float32 [batch (that of tokens), n_layer=2"),
    ("bad_prompt", "generate", dict(prompt=np.array([[1, 99]], np.int32),
                                    num_tokens=np.array([2], np.int32),
                                    temperature=np.zeros([1], np.float32),
                                    top_k=np.zeros([1], np.int32), top_p=np.ones([1], np.float32),
                                    seed=np.zeros([1], np.int64)),
     "prompt must be token ids < 12, the vocabulary size"),
]


def assert_same(got, expected, loader):
    assert sorted(got) == sorted(expected), (loader, sorted(got))
    for key, value in expected.items():
        value, actual = np.asarray(value), got[key]
        if isinstance(actual, str):  # printed by saved_model_cli
            printed = actual.split()
            assert all(repr(v) in actual for v in value.tolist()), (loader, key, printed)
        elif value.dtype.kind in "OSU":
            assert np.asarray(actual).astype(object).tolist() == value.tolist(), (loader, key)
        else:
            actual = np.asarray(actual)
            assert actual.shape == value.shape, (loader, key, actual.shape)
            np.testing.assert_allclose(actual, value, atol=1e-5, rtol=0, err_msg=loader + key)


def assert_show_lists(printed, names):
    """`saved_model_cli show` ([[exit code, stdout]] of `show --all`, or of `show --tag_set
    serve` and `show --tag_set serve --signature_def score`) lists the signatures `names` and
    no other, with mems of static n_layer and d_model."""
    assert all(code == 0 for code, _ in printed), printed
    stdout = "".join(out for _, out in printed)
    listed = sorted((set(re.findall(r"signature_def\['(\w+)'\]", stdout))
                     | set(re.findall(r'SignatureDef key: "(\w+)"', stdout)))
                    - {"__saved_model_init_op"})
    assert listed == names, listed
    assert f"shape: (-1, {N_LAYER}, -1, {D_MODEL})" in stdout  # mems


def bad_requests(text):
    """("bad_<i>", signature, inputs) of the requests of BAD_REQUESTS to a text signature (text
    True) or to an id signature (False); i: the request's index in BAD_REQUESTS."""
    return [(f"bad_{i}", signature, bad_feeds(feeds))
            for i, (signature, feeds, _) in enumerate(BAD_REQUESTS.values())
            if (signature in TEXT_SIGNATURES) == text]


def assert_refused(out, text, loader):
    """Each request of BAD_REQUESTS to a text signature (text True) or to an id signature
    (False) failed in `out` (a loader's outputs) with an error holding its words."""
    for i, (name, (signature, _, words)) in enumerate(BAD_REQUESTS.items()):
        if (signature in TEXT_SIGNATURES) == text:
            message = out.get(f"bad_{i}.error")
            assert message is not None, f"{loader}: {name}: accepted"
            for word in words:
                assert word in str(message), (loader, name, str(message))


def loader_process(served, root, kind):
    """One fresh process, its files in `root`. kind "ids", TensorFlow alone: the full export
    through the session loader (its id signatures, and the BAD_REQUESTS to them), the ids
    export (--notext_signatures) through tf.saved_model.load (it resolves every op as it
    loads; and BAD_IDS), `saved_model_cli show` of both, then `saved_model_cli run` of the
    CLI_REQUESTS of ids. kind "text", with tensorflow_text: the full export's text signatures
    and the BAD_REQUESTS to them through the session loader, all its signatures and every
    request of BAD_REQUESTS through tf.saved_model.load (and its vocabulary asset), and
    `saved_model_cli run` of the text CLI_REQUESTS. A request of BAD_REQUESTS is "bad_<i>".

    Returns:
      ({tag: {name.output: array}}, [[exit code, stdout] of each saved_model_cli command],
      {name.output: what `saved_model_cli run` gave}).
    """
    ids_reqs, text_reqs = requests()
    full, ids_export = served["path"], served["ids"]
    if kind == "ids":
        cli = [r for r in ids_reqs if r[0] in CLI_REQUESTS]
        # the full export as docs/serving.md shows it; the ids export by the commands that
        # read its MetaGraphDef only (`show --all` also loads it with tf.saved_model.load,
        # which the ids_export job does)
        commands = [["show", "--dir", ids_export, "--tag_set", "serve"],
                    ["show", "--dir", ids_export, "--tag_set", "serve", "--signature_def",
                     "score"], ["show", "--all", "--dir", full]]
        bad = [(name, signature, feeds) for name, signature, feeds, _ in BAD_IDS]
        jobs = {"session": ("session", full, ids_reqs + bad_requests(text=False)),
                "ids_export": ("tf2", ids_export, ids_reqs + bad)}
    else:
        cli, commands = [r for r in text_reqs if r[0] in CLI_REQUESTS], []
        jobs = {"session": ("session", full, text_reqs + bad_requests(text=True)),
                "tf2": ("tf2", full, ids_reqs + text_reqs + bad_requests(text=True)
                        + bad_requests(text=False))}
    commands += cli_run_commands(root / "cli", full, cli)
    through_loaders(root, kind, jobs, commands)
    out, printed = read_loaders(root, kind)
    return out, printed, cli_outputs(root / "cli", cli, printed[len(printed) - len(cli):])


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """What the Keras model gives for `requests()` ({name.output: array}; texts as bytes),
    computed once per run for both xdist workers (`save_keras_outputs`) and read-only."""
    with read_only_dir(tmp_path_factory, "serving_loaders_keras_outputs",
                       save_keras_outputs) as root:
        saved = np.load(os.path.join(root, "keras.npz"))
        yield {key: saved[key] for key in saved.files}


def save_keras_outputs(root):
    """Writes root/keras.npz: `keras_outputs` of the shared word-level model (the weights of
    word_export's model directory) for `requests()`; texts as bytes (no pickle)."""
    outputs = keras_outputs(dict(model=word_model(), vocab=vocabulary()), *requests())
    np.savez(os.path.join(root, "keras.npz"),
             **{k: np.asarray(v).astype("S") if np.asarray(v).dtype == object else v
                for k, v in outputs.items()})


def assert_as_keras(results, expected):
    """{loader: (its outputs, the names of the requests it ran)}: each output equals the Keras
    model's; score_text's loss and nll_sum agree."""
    expected = dict(expected)
    keras_loss = expected.pop("score_text.loss")  # compared below, with nll_sum
    for loader, (got, names) in results.items():
        got = {k: v for k, v in got.items() if not k.startswith(("loaded.", "bad_"))}
        wanted = {k: v for k, v in expected.items() if k.split(".")[0] in names}
        loss, nll_sum = got.pop("score_text.loss", None), got.pop("score_text.nll_sum", None)
        assert_same(got, wanted, loader)
        if "score_text" in names:
            scored = expected["score_text.tokens"][0]
            np.testing.assert_allclose(loss * scored, nll_sum, rtol=1e-6)
            np.testing.assert_allclose(loss, keras_loss, atol=1e-5, err_msg=loader)


def test_id_signatures_equal_keras_with_tensorflow_alone(served, expected, tmp_path):
    """`loader_process` "ids": every id signature gives the Keras model's outputs through the
    session loader (full export), tf.saved_model.load (ids export) and saved_model_cli run;
    `saved_model_cli show` and each loader list the export's signatures; the session loader
    refuses every request of BAD_REQUESTS to an id signature with its words, the ids export
    BAD_IDS; tensorflow_text is never imported (the process asserts it)."""
    out, printed, cli = loader_process(served, tmp_path, "ids")
    assert_show_lists(printed[:2], ID_SIGNATURES)
    assert_show_lists(printed[2:3], ALL_SIGNATURES)
    assert_refused(out["session"], text=False, loader="session")
    for name, _, _, words in BAD_IDS:
        assert words in str(out["ids_export"][f"{name}.error"]), name
    assert sorted(out["session"]["loaded.signatures"].tolist()) == ALL_SIGNATURES
    assert sorted(out["ids_export"]["loaded.signatures"].tolist()) == ID_SIGNATURES
    assert str(out["ids_export"]["loaded.vocab_file"]) == served["vocab"].to_text()
    ids_only = [r[0] for r in requests()[0]]
    assert_as_keras({"session": (out["session"], ids_only),
                     "tf.saved_model.load of the ids export": (out["ids_export"], ids_only),
                     "saved_model_cli": (cli, [n for n in CLI_REQUESTS if n in ids_only])},
                    expected)


def test_every_signature_equals_keras_with_tensorflow_text(expected, served, tmp_path):
    """`loader_process` "text": the text signatures through the session loader, every
    signature through tf.saved_model.load and generate_text through saved_model_cli run give
    the Keras model's outputs; both loaders list every signature; tf.saved_model.load refuses
    every request of BAD_REQUESTS with its words, the session loader those to a text signature
    (those to an id signature: test_id_signatures_equal_keras_with_tensorflow_alone); the
    loaded vocabulary asset is the model's vocab.txt."""
    out, _, cli = loader_process(served, tmp_path, "text")
    for loader in ("session", "tf2"):
        assert sorted(out[loader]["loaded.signatures"].tolist()) == ALL_SIGNATURES
    assert_refused(out["session"], text=True, loader="session")
    for text in (True, False):
        assert_refused(out["tf2"], text=text, loader="tf2")
    assert str(out["tf2"]["loaded.vocab_file"]) == served["vocab"].to_text()
    ids_reqs, text_reqs = requests()
    text_only = [r[0] for r in text_reqs]
    assert_as_keras({"session": (out["session"], text_only),
                     "tf.saved_model.load": (out["tf2"], [r[0] for r in ids_reqs + text_reqs]),
                     "saved_model_cli": (cli, [n for n in CLI_REQUESTS if n in text_only])},
                    expected)


# -- bad requests -----------------------------------------------------------------------------
def bad_feeds(feeds):
    """The arrays of a request of BAD_REQUESTS ({input: list, scalar or {"zeros": shape}};
    a sampling setting given as a scalar: one row; texts as UTF-8 bytes)."""
    dtypes = dict(tokens=np.int32, labels=np.int32, prompt=np.int32, num_tokens=np.int32,
                  top_k=np.int32, streams=np.int32, temperature=np.float32,
                  top_p=np.float32, mems=np.float32, seed=np.int64, text="S")
    feeds = {k: np.zeros(v["zeros"], np.float32) if isinstance(v, dict)
             else np.array(v, dtypes[k]) for k, v in feeds.items()}
    for k in ("num_tokens", "temperature", "top_k", "top_p", "seed"):
        if k in feeds and feeds[k].ndim == 0:
            feeds[k] = feeds[k][None]
    return feeds


GREEDY = dict(temperature=0.0, top_k=0, top_p=1.0, seed=0)
MEMS0 = {"zeros": [1, N_LAYER, MEM_LEN, D_MODEL]}
LIMIT = "a limit of this export (runners/export.py --{0})"
# name: (signature, inputs, words the error must contain)
BAD_REQUESTS = {
    "score id >= n_token": ("score", dict(tokens=[[1, 12]], mems=MEMS0),
                            ["tokens must be token ids < 12, the vocabulary size"]),
    "score negative id": ("score", dict(tokens=[[-1, 2]], mems=MEMS0),
                          ["tokens must be token ids >= 0 (vocabulary size 12)"]),
    "score empty tokens": ("score", dict(tokens=np.zeros([1, 0], int).tolist(), mems=MEMS0),
                           ["tokens is empty"]),
    "score too long": ("score", dict(tokens=[[1] * 25], mems=MEMS0),
                       ["the length of tokens exceeds max_seq_len=24",
                        LIMIT.format("max_seq_len")]),
    "score mems longer than mem_len": (
        "score", dict(tokens=[[1]], mems={"zeros": [1, N_LAYER, MEM_LEN + 1, D_MODEL]}),
        [f"mems must hold exactly mem_len={MEM_LEN} positions in this export",
         "so that requests can be batched together"]),
    "score mems shorter than mem_len": (
        "score", dict(tokens=[[1]], mems={"zeros": [1, N_LAYER, 0, D_MODEL]}),
        [f"mems must hold exactly mem_len={MEM_LEN} positions in this export"]),
    "score mems of another batch": (
        "score", dict(tokens=[[1]], mems={"zeros": [2, N_LAYER, MEM_LEN, D_MODEL]}),
        ["mems must be float32 [batch (that of tokens), n_layer=2, mem_len=6, d_model=16]"]),
    "score over max_request_tokens": (
        "score", dict(tokens=[[1] * 24] * 3, mems={"zeros": [3, N_LAYER, MEM_LEN, D_MODEL]}),
        ["the tokens of the request (B x Q) exceeds max_request_tokens=60",
         LIMIT.format("max_request_tokens")]),
    "nll token id >= n_token": ("nll", dict(tokens=[[13]], labels=[[1]], mems=MEMS0),
                                ["tokens must be token ids < 12"]),
    "nll label id >= n_token": ("nll", dict(tokens=[[1]], labels=[[40]], mems=MEMS0),
                                ["labels must be token ids < 12, the vocabulary size"]),
    "init_mems batch too large": ("init_mems", dict(streams=[0] * 4),
                            ["the batch size of init_mems exceeds max_batch_size=3",
                             LIMIT.format("max_batch_size")]),
    "score batch too large": ("score", dict(tokens=[[1]] * 4, mems={"zeros": [4, 2, 6, 16]}),
                              ["the batch size of tokens exceeds max_batch_size=3"]),
    "score_text batch too large": ("score_text", dict(text=["w1 w2"] * 4),
                                   ["the batch size of text exceeds max_batch_size=3"]),
    "generate prompt id >= n_token": ("generate", dict(prompt=[[1, 99]], num_tokens=2,
                                                       **GREEDY),
                                      ["prompt must be token ids < 12, the vocabulary size"]),
    "generate empty prompt": ("generate", dict(prompt=np.zeros([1, 0], int).tolist(),
                                               num_tokens=2, **GREEDY), ["prompt is empty"]),
    "generate prompt too long": ("generate", dict(prompt=[[1] * 25], num_tokens=2, **GREEDY),
                                 ["the length of prompt exceeds max_seq_len=24"]),
    "generate num_tokens 1e9": ("generate", dict(prompt=[[1]], num_tokens=10 ** 9, **GREEDY),
                                ["num_tokens exceeds max_num_tokens=16",
                                 LIMIT.format("max_num_tokens")]),
    "generate sampling inputs of another batch": (
        "generate", dict(prompt=[[1], [2]], num_tokens=[2], **GREEDY),
        ["num_tokens must have one row per row of prompt (batch-major inputs"]),
    "generate over max_request_tokens": (
        "generate", dict(prompt=[[1] * 24] * 2, num_tokens=[16, 1],
                         **{k: [v, v] for k, v in GREEDY.items()}),
        ["the tokens of the request (B x (P + the largest num_tokens)) exceeds "
         "max_request_tokens=60", LIMIT.format("max_request_tokens")]),
    "generate_text prompt over max_seq_len": (
        "generate_text", dict(text=["w1 " * 25], num_tokens=2, **GREEDY),
        ["the token count of a prompt exceeds max_seq_len=24", LIMIT.format("max_seq_len")]),
    "generate_text over max_request_tokens": (
        "generate_text", dict(text=["w1 " * 20, "w2 " * 20], num_tokens=[16, 16],
                              **{k: [v, v] for k, v in GREEDY.items()}),
        ["the tokens of the request (prompt + num_tokens of every text) exceeds "
         "max_request_tokens=60"]),
    "score_text over max_request_bytes": (
        "score_text", dict(text=["w1 " * 39] * 2),
        ["the UTF-8 bytes of all texts of the request exceeds max_request_bytes=200",
         LIMIT.format("max_request_bytes")]),
    "score_text over max_request_tokens": (
        "score_text", dict(text=["w1 " * 30, "w2 " * 30]),
        ["the tokens of all texts of the request exceeds max_request_tokens=60"]),
    "generate num_tokens < 0": ("generate", dict(prompt=[[1]], num_tokens=-1, **GREEDY),
                                ["num_tokens must be >= 0"]),
    "temperature < 0": ("generate", dict(prompt=[[1]], num_tokens=2, **{
        **GREEDY, "temperature": -0.5}), ["temperature must be a finite number >= 0"]),
    "temperature NaN": ("generate", dict(prompt=[[1]], num_tokens=2, **{
        **GREEDY, "temperature": float("nan")}), ["temperature must be a finite number >= 0"]),
    "temperature inf": ("generate", dict(prompt=[[1]], num_tokens=2, **{
        **GREEDY, "temperature": float("inf")}), ["temperature must be a finite number >= 0"]),
    "top_k < 0": ("generate", dict(prompt=[[1]], num_tokens=2, **{**GREEDY, "top_k": -3}),
                  ["top_k must be >= 0"]),
    "top_p 0": ("generate", dict(prompt=[[1]], num_tokens=2, **{**GREEDY, "top_p": 0.0}),
                ["top_p must be in (0, 1]"]),
    "top_p > 1": ("generate", dict(prompt=[[1]], num_tokens=2, **{**GREEDY, "top_p": 1.5}),
                  ["top_p must be in (0, 1]"]),
    "generate_text top_p > 1": ("generate_text", dict(text=["w1"], num_tokens=2, **{
        **GREEDY, "top_p": 2.0}), ["top_p must be in (0, 1]"]),
    "generate_text unknown word": ("generate_text", dict(text=["w1 zebra"], num_tokens=2,
                                                         **GREEDY), ["zebra"]),
    "generate_text empty prompt": ("generate_text", dict(text=[""], num_tokens=2, **GREEDY),
                                   ["the prompt has no tokens"]),
    "generate_text too long": ("generate_text", dict(text=["w1 " * 41], num_tokens=2,
                                                     **GREEDY),
                               ["the UTF-8 length of a text exceeds max_text_bytes=120",
                                LIMIT.format("max_text_bytes")]),
    "generate_text num_tokens 1e9": ("generate_text", dict(text=["w1"], num_tokens=10 ** 9,
                                                           **GREEDY),
                                     ["num_tokens exceeds max_num_tokens=16"]),
    "score_text empty text": ("score_text", dict(text=[""]),
                              ["score_text needs texts of at least 2 tokens"]),
    "score_text one token": ("score_text", dict(text=["\n"]),  # <eos> alone
                             ["score_text needs texts of at least 2 tokens"]),
    "score_text too long": ("score_text", dict(text=["w1 w2\n", "w1 " * 41]),
                            ["the UTF-8 length of a text exceeds max_text_bytes=120"]),
}


# -- export.py's own errors -------------------------------------------------------------------
def export_cli(*args, wrapper=()):
    """runners/export.py --notext_signatures `args` in a process of its own (behind
    `wrapper`), as a user runs it."""
    return run(list(wrapper) + [sys.executable, EXPORT, "--notext_signatures"] + list(args))


def export_here(*args):
    """The same command run in this process (`runner_calls.call_runner`: the same flag checks,
    main, error line and exit code)."""
    return call_runner("export", ["--notext_signatures"] + list(args))


def assert_one_line_error(proc, code, *words):
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]


def test_export_usage_errors(served, tmp_path):
    """Each usage error is one line and exit code 2, nothing written; in this process but for
    the first case, which runs as a user runs it."""
    model_dir = served["model_dir"]
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    cases = [
        ([f"--export_dir={tmp_path / 'e'}"], ["missing required flag --model_dir;"]),
        ([f"--model_dir={model_dir}", f"--export_dir={a_file}"], ["is a file"]),
        ([f"--model_dir={tmp_path / 'missing'}", f"--export_dir={tmp_path / 'e'}"],
         ["config.json not found", "is not a txl-tf model directory"]),
        ([f"--model_dir={tmp_path}", f"--export_dir={tmp_path / 'e'}"],
         ["config.json not found", "is not a txl-tf model directory"]),
        ([f"--model_dir={model_dir}", f"--export_dir={tmp_path / 'e'}", "--max_seq_len=0"],
         ["--max_seq_len must be an integer in [1, 2147483647]"]),
        ([f"--model_dir={model_dir}", f"--export_dir={tmp_path / 'e'}", "--max_text_bytes=-5"],
         ["--max_text_bytes must be an integer in [1, 2147483647]"]),
        ([f"--model_dir={model_dir}", f"--export_dir={tmp_path / 'e'}",
          "--warmup_requests=143"], ["--warmup_requests must be in [0, 142]"]),
    ]
    for i, (args, words) in enumerate(cases):
        assert_one_line_error((export_here if i else export_cli)(*args), 2, *words)
    no_checkpoint = tmp_path / "no_checkpoint"
    no_checkpoint.mkdir()
    shutil.copy(os.path.join(model_dir, "config.json"), no_checkpoint)
    assert_one_line_error(export_here(f"--model_dir={no_checkpoint}",
                                     f"--export_dir={tmp_path / 'e'}"), 2, "no checkpoint")
    assert a_file.read_text() == "x" and not os.path.exists(tmp_path / "e" / "1")


def test_export_damaged_checkpoint_is_a_runtime_error(served, tmp_path):
    model_dir = tmp_path / "model"
    writable_copy(served["model_dir"], model_dir)
    data = [f for f in os.listdir(model_dir) if ".data-" in f]
    with open(model_dir / data[0], "r+b") as f:
        f.truncate(100)
    proc = export_here(f"--model_dir={model_dir}", f"--export_dir={tmp_path / 'e'}")
    assert_one_line_error(proc, 1, "cannot read the checkpoint")
    assert not os.path.exists(tmp_path / "e" / "1")


def private_mount(script):
    """`sh -c script` in a private mount namespace, or None where this machine has none."""
    if not shutil.which("unshare"):
        return None
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return ["unshare", "-m", "sh", "-c", script] if probe.returncode == 0 else None


# Both exports of the next test in one process (runners/export.py's main, `call_runner`).
READ_ONLY_AND_FULL = textwrap.dedent("""
    import json, os, sys
    from runner_calls import call_runner
    runs = [call_runner("export", args) for args in json.loads(sys.argv[1])]
    print(json.dumps({"runs": [[proc.returncode, proc.stderr] for proc in runs],
                      "left": os.listdir(sys.argv[2])}))
""")


def test_export_read_only_and_full_export_dir(served, tmp_path):
    """A read-only export_dir is an error (1) that says so; a full disk an error (1) that
    names it; neither leaves a version or temporary directory behind. One process in a
    private mount namespace runs both exports: one export_dir bound read-only, the other a
    256 KiB tmpfs."""
    read_only, full = tmp_path / "read_only", tmp_path / "full"
    for target in (read_only, full):
        (target / "1").mkdir(parents=True)  # an earlier version, which must survive
    wrapper = private_mount(f'mount --bind "{read_only}" "{read_only}" && '
                            f'mount -o remount,bind,ro "{read_only}" "{read_only}" && '
                            f'mount -t tmpfs -o size=256k tmpfs "{full}" && exec "$@"')
    if wrapper is None:
        pytest.skip("no private mount namespace here (needs root and unshare)")
    # No warmup requests: the read-only directory is refused before anything is loaded, and the
    # save fails on the full one with them or without (its saved_model.pb alone is larger).
    args = [["--notext_signatures", "--warmup_requests=0", f"--model_dir={served['model_dir']}",
             f"--export_dir={target}"] for target in (read_only, full)]
    proc = run(wrapper + ["sh", sys.executable, "-c", READ_ONLY_AND_FULL, json.dumps(args),
                          str(full)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    (code, stderr), (full_code, full_stderr) = result["runs"]
    assert_one_line_error(subprocess.CompletedProcess([], code, "", stderr), 1, "not writable")
    assert_one_line_error(subprocess.CompletedProcess([], full_code, "", full_stderr), 1,
                          f"no space left on {full}")
    assert result["left"] == []  # what the tmpfs held after the export
    assert os.listdir(read_only) == ["1"] and os.listdir(full) == ["1"]
