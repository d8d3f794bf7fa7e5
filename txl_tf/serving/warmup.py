"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests` of an export.

TF Serving replays this TFRecord file of `PredictionLog` protos (at most 1,000) when it loads
a version, so that the first user request does not pay for setting up the graph. Every
signature gets `count` requests; request i of a signature has the i-th batch size of
`server_config.allowed_batch_sizes` (cycling), rows of the length clients send (score / nll:
tgt_len tokens after a memory of mem_len; generate: a gen_seg_len prompt; text: a text of that
many tokens), all within the export's limits.

Each request is run through the module before it is written (a request that fails would keep
TF Serving from loading the version), in the context in which `tf.saved_model.save` traces the
signatures: a tf.function's traces are keyed by that context, so an export that makes its
warmup requests before it saves traces every signature once, not twice.

Example:
  >>> logs = warmup_logs(module, "my_model", 4)
  >>> tf.saved_model.save(module, "VERSION", signatures=module.signatures())
  >>> write_logs(logs, "VERSION/assets.extra/tf_serving_warmup_requests")
"""
import contextlib

import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

from txl_tf.serving import server_config, signatures

WARMUP_FILE = "tf_serving_warmup_requests"
MAX_RECORDS = 1000  # what TF Serving reads of the file at most


def signature_inputs(module, signature, batch):
    """{input name: numpy array} of one representative request of `signature` with `batch`
    rows (the warmup of its `signatures.Signature` record)."""
    return signatures.by_name(signature).warmup(module, batch)


class WarmupError(ValueError):
    """A warmup request that the export's own signature rejects."""


def _check_runs(module, signature, inputs):
    """Runs one request through the module's signature: a warmup request that fails would
    keep TF Serving from loading the version."""
    try:
        module.signatures()[signature](**{k: tf.constant(v) for k, v in inputs.items()})
    except tf.errors.InvalidArgumentError as error:
        batch = len(next(iter(inputs.values())))
        lines = [line.strip() for line in error.message.splitlines() if line.strip()]
        detail = next((line for line in lines if "assertion failed" in line), lines[-1])
        raise WarmupError(f"the warmup request of {signature} (batch {batch}) fails: "
                          f"{detail}; export with --warmup_requests=0 and send a request of "
                          "your own first.") from None


def save_tracing_context():
    """The context in which `tf.saved_model.save` (default `SaveOptions`) traces a module's
    functions; a tf.function traced inside it is not traced again by the save. TensorFlow
    names it only in a private module: where that is gone, a null context (the save then
    traces again)."""
    try:
        from tensorflow.python.saved_model import save_context
    except ImportError:
        return contextlib.nullcontext()
    if save_context.in_save_context():
        return contextlib.nullcontext()
    return save_context.save_context(tf.saved_model.SaveOptions())


def warmup_logs(module, model_name, count):
    """`count` PredictionLog protos per signature of `module` (a `ServingModule`), each run
    once through the module first, in `save_tracing_context` (an empty list for count 0).

    Raises:
      WarmupError: a request failed (e.g. a vocabulary whose first symbols make no prompt).
    """
    count = max(count, 0)
    if len(module.signatures()) * count > MAX_RECORDS:
        raise ValueError(f"{len(module.signatures()) * count} warmup requests exceed TF "
                         f"Serving's {MAX_RECORDS}: give a smaller --warmup_requests.")
    sizes = server_config.allowed_batch_sizes(module.limits)
    logs = []
    with save_tracing_context():
        for signature in sorted(module.signatures()):
            for i in range(count):
                request = predict_pb2.PredictRequest()
                request.model_spec.name = model_name
                request.model_spec.signature_name = signature
                inputs = signature_inputs(module, signature, sizes[i % len(sizes)])
                _check_runs(module, signature, inputs)
                for key, value in inputs.items():
                    request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
                logs.append(prediction_log_pb2.PredictionLog(
                    predict_log=prediction_log_pb2.PredictLog(request=request)))
    return logs


def write_logs(logs, path):
    """Writes `logs` (`warmup_logs`) to `path` (a TFRecord file); nothing when there are none."""
    if not logs:
        return
    with tf.io.TFRecordWriter(path) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
