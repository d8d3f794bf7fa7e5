"""What TF Serving does with an export, replayed through its session-based loader
(`tf.compat.v1.saved_model.loader.load` into a graph of its own + `Session.run`, as the server's
C++ LoadSavedModel runs a SavedModel; that a fresh process with TensorFlow and TF Text alone loads
it is tests/serving/test_serving_loaders.py's):

* request batching: the batcher concatenates requests along dimension 0 and splits the outputs
  along dimension 0; for every signature, the split outputs of a merged request equal those of
  each request run alone;
* the warmup file: PredictionLog records (tensorflow-serving-api protos) that all replay;
* the REST JSON of docs/serving.md, turned into tensors as the server's JSON codec does (row
  `instances` and columnar `inputs`), gives the documented responses, and its gRPC example
  (the stub's Predict answered by the session loader) prints what the page says;
* the per-request budgets fail with their named error before the model runs, in both loaders;
* models.config and batching_parameters.txt parse as the server's protos.
"""
import contextlib
import io
import json
import os
import re
import sys
import time
import types

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signatures' ops)
from google.protobuf import (descriptor_pb2, descriptor_pool, message_factory, text_format,
                             wrappers_pb2)
from tensorflow_serving.apis import predict_pb2, prediction_log_pb2, prediction_service_pb2_grpc
from tensorflow_serving.config import model_server_config_pb2

import txl_tf
from runners import export
from tf_records.vocab.model_vocab import write_model_vocab
from tf_records.text.tokenize import TextRules
from tf_records.vocab.vocabulary import Vocabulary
from txl_tf.serving import server_config
from txl_tf.serving.module import ServingLimits

from saved_model_calls import SavedModelCalls
from shared_dirs import read_only_dir
from tiny import tiny_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "serving.md")
# The model of docs/serving.md's REST examples: small enough that a memory is 16 numbers.
DOC_MODEL = dict(n_token=12, n_layer=2, d_model=4, n_head=1, d_head=4, d_inner=8, tgt_len=3,
                 mem_len=2, init_std=0.5)
N_LAYER, D_MODEL, MEM_LEN = 2, 4, 2
LIMITS = dict(max_seq_len=24, max_num_tokens=16, max_text_bytes=120, max_batch_size=3,
              max_request_tokens=200, max_request_bytes=400)
# Per-row limits far above what a request may cost in total: a request over a budget would run
# for minutes if the model ran before the check.
BUDGET = dict(max_seq_len=100_000, max_num_tokens=100_000, max_text_bytes=1_000_000,
              max_batch_size=64, max_request_tokens=64, max_request_bytes=1_000_000)
# The model of the budget export and of the export whose warmup fails: the doc model with one
# layer. What they check fails before the model runs (a budget) or at the first warmup request
# of a signature, so how layers stack plays no part; every layer adds to the tracing of every
# signature.
FAILS_EARLY_LAYERS = 1


def doc_model_dir(root, **changes):
    """Writes root/model: the doc model's directory (seed 3, word-level, 12 tokens), with
    `changes` to DOC_MODEL."""
    model_dir = os.path.join(root, "model")
    keras.utils.set_random_seed(3)
    model = txl_tf.TransformerXL(tiny_config(**{**DOC_MODEL, **changes}))
    txl_tf.save_model(model, model_dir)
    vocab = Vocabulary(["<eos>"] + [f"w{i}" for i in range(11)], "word", specials=["<eos>"])
    write_model_vocab(model_dir, vocab, TextRules("word", eos="<eos>"))
    return model_dir


SETTINGS = dict(mem_len=MEM_LEN, clamp_len=5, gen_mem_len=8)


def export_doc_model(root):
    """Fills `root`: the doc model's directory (model/) exported with LIMITS and 2 warmup
    requests per signature (txl/); what the export returned in exports.json."""
    info = export.run(export.ExportOptions(doc_model_dir(root), os.path.join(root, "txl"),
                                           warmup_requests=2, **SETTINGS),
                      ServingLimits(**LIMITS))
    with open(os.path.join(root, "exports.json"), "w") as f:
        json.dump({"info": info}, f)


def export_budget_model(root):
    """Fills `root`: the doc model's directory with FAILS_EARLY_LAYERS layers (model/),
    exported with BUDGET and no warmup requests (budget/); what the export returned in
    exports.json."""
    budget = export.run(export.ExportOptions(doc_model_dir(root, n_layer=FAILS_EARLY_LAYERS),
                                             os.path.join(root, "budget"),
                                             warmup_requests=0, **SETTINGS),
                        ServingLimits(**BUDGET))
    with open(os.path.join(root, "exports.json"), "w") as f:
        json.dump({"budget": budget}, f)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The doc model, word-level, exported with LIMITS (and 2 warmup requests per signature);
    made once per run for both xdist workers and read-only (`shared_dirs`); the Keras model
    loaded from its model directory."""
    with read_only_dir(tmp_path_factory, "tf_serving_doc_model", export_doc_model) as root:
        with open(os.path.join(root, "exports.json")) as f:
            exports = json.load(f)
        model_dir = os.path.join(root, "model")
        yield dict(root=root, model=txl_tf.load_model(model_dir), model_dir=model_dir,
                   path=exports["info"]["export_path"], info=exports["info"],
                   session=SavedModelCalls(exports["info"]["export_path"], "session"))


@pytest.fixture(scope="module")
def budget_export(tmp_path_factory):
    """The path of the one-layer doc model's export with BUDGET, made once per run for both xdist
    workers and read-only, apart from `served`'s (only the budget tests wait for it; the two
    xdist workers may build them at once)."""
    with read_only_dir(tmp_path_factory, "tf_serving_budget_export",
                       export_budget_model) as root:
        with open(os.path.join(root, "exports.json")) as f:
            yield json.load(f)["budget"]["export_path"]


def through_session(served, requests):
    """{request name: {input: array}} -> {request name: {output: array}} through the session
    loader (strings as bytes); a request name is `signature.anything`."""
    out = {}
    for name, feeds in requests.items():
        result = served["session"](name.split(".")[0], feeds)
        out[name] = {k: v.astype("S") if v.dtype == object else v for k, v in result.items()}
    return out


# -- 1. the server's batcher -------------------------------------------------------------------
def batch_pairs():
    """{signature: (request of batch 1, request of batch 2)}, the two of equal non-batch shapes
    (what the batcher requires) and different per-row settings."""
    rng = np.random.RandomState(0)
    i32, f32 = np.int32, np.float32

    def ids(*shape):
        return rng.randint(0, DOC_MODEL["n_token"], shape).astype(i32)

    def mems(batch):
        return rng.normal(size=[batch, N_LAYER, MEM_LEN, D_MODEL]).astype(f32)

    def sampling(num_tokens, temperature, top_k, top_p, seed):
        return dict(num_tokens=np.array(num_tokens, i32), temperature=np.array(temperature, f32),
                    top_k=np.array(top_k, i32), top_p=np.array(top_p, f32),
                    seed=np.array(seed, np.int64))

    texts = (np.array(["w1 w2 w3"], "S"), np.array(["w4\nw5 w6", "w7 w8 w9 w10 w1\n"], "S"))
    return {
        "score": (dict(tokens=ids(1, 4), mems=mems(1)), dict(tokens=ids(2, 4), mems=mems(2))),
        "serving_default": (dict(tokens=ids(1, 3), mems=mems(1)),
                            dict(tokens=ids(2, 3), mems=mems(2))),
        "nll": (dict(tokens=ids(1, 5), labels=ids(1, 5), mems=mems(1)),
                dict(tokens=ids(2, 5), labels=ids(2, 5), mems=mems(2))),
        "init_mems": (dict(streams=np.zeros([1], i32)), dict(streams=np.zeros([2], i32))),
        "generate": (dict(prompt=ids(1, 5), **sampling([6], [1.3], [5], [0.9], [11])),
                     dict(prompt=ids(2, 5), **sampling([9, 3], [0.0, 0.8], [0, 0],
                                                       [1.0, 0.7], [11, 4]))),
        "generate_text": (dict(text=texts[0], **sampling([4], [1.1], [4], [1.0], [2])),
                          dict(text=texts[1], **sampling([0, 7], [0.9, 0.0], [3, 0],
                                                         [0.8, 1.0], [2, 9]))),
        "score_text": (dict(text=texts[0]), dict(text=texts[1])),
    }


def test_merged_requests_split_into_the_separate_answers(served):
    pairs = batch_pairs()
    assert sorted(pairs) == served["info"]["signatures"]  # every signature
    requests = {}
    for signature, (one, two) in pairs.items():
        requests[f"{signature}.one"], requests[f"{signature}.two"] = one, two
        requests[f"{signature}.merged"] = {k: np.concatenate([one[k], two[k]]) for k in one}
    out = through_session(served, requests)
    for signature in pairs:
        merged, one, two = (out[f"{signature}.{n}"] for n in ("merged", "one", "two"))
        assert sorted(merged) == sorted(one)
        for key, value in merged.items():
            assert value.shape[0] == 3, (signature, key, value.shape)  # batch on dimension 0
            for part, alone in ((value[:1], one[key]), (value[1:], two[key])):
                assert part.shape == alone.shape, (signature, key)
                if value.dtype.kind in "SO":
                    assert part.tolist() == alone.tolist(), (signature, key)
                else:
                    np.testing.assert_allclose(part, alone, atol=1e-5, rtol=0,
                                               err_msg=f"{signature}.{key}")
    # per-row lengths of the padded generate output, and rows that did sample
    generated = out["generate.merged"]
    assert generated["lengths"].tolist() == [6, 9, 3]
    width = LIMITS["max_num_tokens"]
    for row, n in zip(generated["tokens"], [6, 9, 3]):
        assert row.shape == (width,) and (row[n:] == -1).all() and (row[:n] >= 0).all()
    assert out["generate_text.merged"]["text"][1] == b""  # num_tokens 0


def test_a_row_samples_the_same_tokens_in_any_batch(served):
    """The sampled tokens of a row depend on its seed and settings only (the model itself in
    Keras, cached generation of that row alone)."""
    from txl_tf.generation.generator import Generator

    one, two = batch_pairs()["generate"]
    gen = Generator(served["model"], mem_len=8, clamp_len=5)
    out = through_session(served, {"generate.two": two})["generate.two"]["tokens"]
    for b in range(2):
        n = int(two["num_tokens"][b])
        alone = gen.generate(two["prompt"][b:b + 1], n, float(two["temperature"][b]),
                             int(two["top_k"][b]), float(two["top_p"][b]), int(two["seed"][b]))
        np.testing.assert_array_equal(out[b, :n], alone[0])


# -- 2. warmup -------------------------------------------------------------------------------
def replay(call, path):
    """[[signature, sorted output batch sizes]] of each warmup record of the export at `path`
    run through `call` (a `SavedModelCalls`)."""
    replayed = []
    warmup = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
    for record in tf.compat.v1.io.tf_record_iterator(warmup):
        request = prediction_log_pb2.PredictionLog.FromString(record).predict_log.request
        feeds = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}
        result = call(request.model_spec.signature_name, feeds)
        rows = {len(v) for v in result.values()}
        replayed.append([request.model_spec.signature_name, sorted(rows)])
    return replayed


def test_warmup_records_parse_and_replay(served):
    path = os.path.join(served["path"], "assets.extra", "tf_serving_warmup_requests")
    logs = [prediction_log_pb2.PredictionLog.FromString(r)
            for r in tf.compat.v1.io.tf_record_iterator(path)]
    signatures = served["info"]["signatures"]
    assert len(logs) == 2 * len(signatures)
    sizes = server_config.allowed_batch_sizes(ServingLimits(**LIMITS))
    batches = {}
    for log in logs:
        request = log.predict_log.request
        assert request.model_spec.name == "txl"
        batch = {tf.make_ndarray(v).shape[0] for v in request.inputs.values()}
        assert len(batch) == 1  # every input batch-major, one batch
        batches.setdefault(request.model_spec.signature_name, []).extend(batch)
    assert batches == {s: sizes[:2] for s in signatures}
    replayed = replay(served["session"], served["path"])
    assert replayed == [[s, [b]] for s in signatures for b in sizes[:2]]


def test_a_warmup_request_that_fails_stops_the_export(monkeypatch, tmp_path):
    """Every warmup request runs once through the module before it is written: one that fails
    (here: an id outside the vocabulary) is an export error, and no version is left behind."""
    from txl_tf.serving import warmup as serving_warmup

    inputs = serving_warmup.signature_inputs

    def bad_nll(module, signature, batch):
        out = inputs(module, signature, batch)
        if signature == "nll":
            out["labels"] = out["labels"] + DOC_MODEL["n_token"]
        return out

    monkeypatch.setattr(serving_warmup, "signature_inputs", bad_nll)
    with pytest.raises(export.ExportRuntimeError,
                       match=r"the warmup request of nll \(batch 1\) fails: .*labels must be "
                             r"token ids < 12.*--warmup_requests=0"):
        export.run(export.ExportOptions(doc_model_dir(tmp_path, n_layer=FAILS_EARLY_LAYERS),
                                        str(tmp_path / "e"), mem_len=MEM_LEN,
                                        text_signatures=False), ServingLimits(**LIMITS))
    assert [n for n in os.listdir(tmp_path / "e") if not n.startswith(".")] == []


# -- 3. the REST examples of docs/serving.md --------------------------------------------------
def rest_examples():
    """(request, response) JSON pairs of docs/serving.md: a ```json block with a
    signature_name, then the ```json block of its response."""
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", open(DOC).read(), re.S)]
    pairs = []
    for request, response in zip(blocks, blocks[1:]):
        if "signature_name" in request:
            pairs.append((request, response))
    return pairs


def json_codec(call, requests):
    """The JSON responses of TF Serving's REST API to `requests` (JSON objects), their tensors
    made and answered as the server's JSON codec does, through `call` (a `SavedModelCalls`)."""

    def tensor(value, dtype):
        if dtype == tf.string:
            return np.array(value, object)
        return np.array(value, dtype.as_numpy_dtype)

    def plain(value):
        value = value.tolist() if isinstance(value, np.ndarray) else value
        if isinstance(value, bytes):
            return value.decode()
        return [plain(v) for v in value] if isinstance(value, list) else value

    responses = []
    for request in requests:
        dtypes = call.input_dtypes(request["signature_name"])
        if "instances" in request:  # row format: one object per row, stacked on dimension 0
            rows = request["instances"]
            feeds = {k: tensor([row[k] for row in rows], dtypes[k]) for k in rows[0]}
        else:  # columnar format: each input whole
            feeds = {k: tensor(v, dtypes[k]) for k, v in request["inputs"].items()}
        out = call(request["signature_name"], feeds)
        if "instances" in request:
            batch = len(next(iter(out.values())))
            responses.append({"predictions": [{k: plain(np.asarray(v[i]))
                                               for k, v in out.items()} for i in range(batch)]})
        else:
            responses.append({"outputs": {k: plain(v) for k, v in out.items()}})
    return json.loads(json.dumps(responses))  # as the client reads them


def assert_json_equal(got, want, where):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), (where, sorted(got))
        for key in want:
            assert_json_equal(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (where, got)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_json_equal(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert abs(got - want) <= 1e-5, (where, got, want)
    else:
        assert got == want, (where, got, want)


def test_the_documented_rest_examples_give_the_documented_responses(served):
    pairs = rest_examples()
    signatures = {request["signature_name"] for request, _ in pairs}
    assert signatures == set(served["info"]["signatures"]) - {"serving_default"}
    formats = {("instances" in request, request["signature_name"]) for request, _ in pairs}
    assert {f for f, _ in formats} == {True, False}  # row and columnar examples
    got = json_codec(served["session"], [request for request, _ in pairs])
    for (request, response), answer in zip(pairs, got):
        assert_json_equal(answer, response, request["signature_name"])


# -- 4. per-request budgets --------------------------------------------------------------------
def over_budget(call):
    """{case: [error message or None, seconds]} of requests over the BUDGET export's budgets,
    each through `call` (a `SavedModelCalls`), twice: the seconds are the second call's (the
    first call of a signature also sets up its graph, once per loaded model, which a loaded
    machine can stretch past the bound)."""

    def per_row(batch, num_tokens):
        return dict(num_tokens=np.full([batch], num_tokens, np.int32),
                    temperature=np.zeros([batch], np.float32), top_k=np.zeros([batch], np.int32),
                    top_p=np.ones([batch], np.float32), seed=np.zeros([batch], np.int64))

    text = "w1 w2 w3 " * 33_000  # 297 kB, 99,000 tokens
    rows = BUDGET["max_request_bytes"] // len(text) + 1  # the fewest rows over the bytes budget
    long_text = np.array([text] * rows, object)
    mems = np.zeros([8, FAILS_EARLY_LAYERS, MEM_LEN, D_MODEL], np.float32)
    cases = {
        "score": ("score", dict(tokens=np.ones([8, 16], np.int32), mems=mems)),
        "nll": ("nll", dict(tokens=np.ones([8, 16], np.int32),
                            labels=np.ones([8, 16], np.int32), mems=mems)),
        "generate": ("generate", dict(prompt=np.ones([1, 1], np.int32), **per_row(1, 100_000))),
        "generate_text tokens": ("generate_text", dict(text=np.array(["w1"], object),
                                                       **per_row(1, 100_000))),
        "generate_text bytes": ("generate_text", dict(text=long_text, **per_row(rows, 10))),
        "score_text bytes": ("score_text", dict(text=long_text)),
        "score_text tokens": ("score_text", dict(text=long_text[:1])),
    }
    result = {}
    for name, (signature, feeds) in cases.items():
        messages = []
        for _ in range(2):  # the seconds of the second call: the first also sets the graph up
            start = time.time()
            try:
                call(signature, feeds)
                messages.append(None)
            except tf.errors.InvalidArgumentError as error:
                messages.append(error.message)
            result[name] = [messages[-1], time.time() - start]
        assert messages[0] == messages[1], (name, messages)
    return result


LIMIT = "a limit of this export (runners/export.py --{0})"
BUDGET_ERRORS = {
    "score": "the tokens of the request (B x Q) exceeds max_request_tokens=64",
    "nll": "the tokens of the request (B x Q) exceeds max_request_tokens=64",
    "generate": "the tokens of the request (B x (P + the largest num_tokens)) exceeds "
                "max_request_tokens=64",
    "generate_text tokens": "the tokens of the request (prompt + num_tokens of every text) "
                            "exceeds max_request_tokens=64",
    "generate_text bytes": "the UTF-8 bytes of all texts of the request exceeds "
                           "max_request_bytes=1000000",
    "score_text bytes": "the UTF-8 bytes of all texts of the request exceeds "
                        "max_request_bytes=1000000",
    "score_text tokens": "the tokens of all texts of the request exceeds max_request_tokens=64",
}


@pytest.mark.parametrize("loader", ["session", "tf2"])
def test_a_request_over_a_budget_fails_before_the_model_runs(budget_export, loader):
    """Each request would run the model for minutes (100,000 generated tokens; 297 kB of text
    scored in segments of 3 tokens): failing within 10 s shows the check comes first."""
    result = over_budget(SavedModelCalls(budget_export, loader))
    assert sorted(result) == sorted(BUDGET_ERRORS)
    for name, words in BUDGET_ERRORS.items():
        message, seconds = result[name]
        assert message is not None, f"{name}: accepted"
        flag = words.split(" exceeds ")[1].split("=")[0]
        assert words in message and LIMIT.format(flag) in message, (name, message)
        assert seconds < 10, (name, seconds)


# -- 5. the server's configuration files -------------------------------------------------------
def batching_parameters_class():
    """TF Serving's BatchingParameters message (session_bundle_config.proto of
    tensorflow/serving, fields as there), which the tensorflow-serving-api wheel lacks."""
    f = descriptor_pb2.FileDescriptorProto(name="txl_test/batching_parameters.proto",
                                           package="tensorflow.serving", syntax="proto3",
                                           dependency=["google/protobuf/wrappers.proto"])
    m = f.message_type.add(name="BatchingParameters")
    F = descriptor_pb2.FieldDescriptorProto
    for number, name, kind, type_name, label in [
            (1, "max_batch_size", F.TYPE_MESSAGE, ".google.protobuf.Int64Value", F.LABEL_OPTIONAL),
            (2, "batch_timeout_micros", F.TYPE_MESSAGE, ".google.protobuf.Int64Value",
             F.LABEL_OPTIONAL),
            (3, "max_enqueued_batches", F.TYPE_MESSAGE, ".google.protobuf.Int64Value",
             F.LABEL_OPTIONAL),
            (4, "num_batch_threads", F.TYPE_MESSAGE, ".google.protobuf.Int64Value",
             F.LABEL_OPTIONAL),
            (5, "thread_pool_name", F.TYPE_MESSAGE, ".google.protobuf.StringValue",
             F.LABEL_OPTIONAL),
            (6, "allowed_batch_sizes", F.TYPE_INT64, None, F.LABEL_REPEATED),
            (7, "pad_variable_length_inputs", F.TYPE_BOOL, None, F.LABEL_OPTIONAL)]:
        field = m.field.add(name=name, number=number, type=kind, label=label)
        if type_name:
            field.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    wrappers = descriptor_pb2.FileDescriptorProto()
    wrappers_pb2.DESCRIPTOR.CopyToProto(wrappers)
    pool.Add(wrappers)
    pool.Add(f)
    descriptor = pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters")
    return message_factory.GetMessageClass(descriptor)


def test_server_config_files_parse_and_fit_the_limits(served):
    base = os.path.dirname(served["path"])
    assert served["info"]["server_config"] == {
        name: os.path.join(base, name) for name in ("models.config", "batching_parameters.txt")}
    config = text_format.Parse(open(os.path.join(base, "models.config")).read(),
                               model_server_config_pb2.ModelServerConfig())
    (model,) = config.model_config_list.config
    assert (model.name, model.base_path, model.model_platform) == ("txl", base, "tensorflow")
    params = text_format.Parse(open(os.path.join(base, "batching_parameters.txt")).read(),
                               batching_parameters_class()())
    limits = ServingLimits(**LIMITS)
    largest = params.max_batch_size.value
    assert list(params.allowed_batch_sizes) == [1, 2, 3] and largest == 3
    assert not params.pad_variable_length_inputs
    # a batch of `largest` rows, each as costly as one row may be, fits every budget
    assert largest <= limits.max_batch_size
    assert largest * (limits.max_seq_len + limits.max_num_tokens) <= limits.max_request_tokens
    assert largest * limits.max_text_bytes <= limits.max_request_bytes
    assert server_config.batch_limit(ServingLimits(**BUDGET)) == 1


# -- the gRPC example of docs/serving.md -------------------------------------------------------
class SessionStub:
    """TF Serving's PredictionServiceStub, its Predict answered by `call` (a `SavedModelCalls`):
    the request's tensors through the session loader."""

    def __init__(self, call):
        self.call = call

    def Predict(self, request, timeout=None):
        feeds = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}
        out = self.call(request.model_spec.signature_name, feeds)
        response = predict_pb2.PredictResponse()
        for key, value in out.items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value))
        return response


def test_the_documented_grpc_example_prints_what_the_page_says(served, monkeypatch):
    text = open(DOC).read().split("### gRPC", 1)[1]
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    printed = re.search(r"prints\n\n```text\n(.*?)\n```", text, re.S).group(1)
    monkeypatch.setattr(prediction_service_pb2_grpc, "PredictionServiceStub",
                        lambda channel: SessionStub(served["session"]))
    monkeypatch.setitem(sys.modules, "grpc",
                        types.SimpleNamespace(insecure_channel=lambda target: None))
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exec(compile(snippet, "docs/serving.md", "exec"), {"__name__": "snippet"})
    assert stdout.getvalue().strip().splitlines()[-1] == printed
