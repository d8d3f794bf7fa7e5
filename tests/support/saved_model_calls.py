"""A SavedModel's signatures called as its consumers call them, for the serving tests and their
child processes (which put this folder on their PYTHONPATH: `SUPPORT`).

Two loaders: "session", TF1's `tf.compat.v1.saved_model.loader.load` into a `Session` and
`Session.run` of the signature's tensor names (TF Serving's path); "function", TF2's
`tf.saved_model.load` and a call of the concrete function.

Example:
  >>> call = SavedModelCalls(path, "session")
  >>> call("score", {"tokens": np.ones([2, 4], np.int32), "mems": mems})["log_probs"].shape
"""
import os

import tensorflow as tf

SUPPORT = os.path.dirname(os.path.abspath(__file__))


class SavedModelCalls:
    """The signatures of the SavedModel at `path`, through one loader.

    Args:
      path: the SavedModel directory.
      loader: "session" or "function".

    Call arguments:
      signature: a signature name.
      feeds: {input name: NumPy array}.

    Returns:
      {output name: NumPy array}.

    Raises:
      tf.errors.InvalidArgumentError: the model refused the request.
    """

    def __init__(self, path, loader="session"):
        self.loader = loader
        if loader == "session":
            self.session = tf.compat.v1.Session(graph=tf.Graph())
            self.meta = tf.compat.v1.saved_model.loader.load(self.session, ["serve"], path)
        else:
            self.loaded = tf.saved_model.load(path)

    def names(self) -> list:
        """The sorted names of the SavedModel's signatures, as this loader lists them (the
        session loader's SignatureDefs without the initializer's, `__saved_model_init_op`)."""
        if self.loader == "session":
            return sorted(k for k in self.meta.signature_def if k != "__saved_model_init_op")
        return sorted(self.loaded.signatures)

    def input_dtypes(self, signature) -> dict:
        """{input name: tf.DType} of `signature`."""
        if self.loader == "session":
            inputs = self.meta.signature_def[signature].inputs
            return {k: tf.dtypes.as_dtype(v.dtype) for k, v in inputs.items()}
        _, inputs = self.loaded.signatures[signature].structured_input_signature
        return {k: v.dtype for k, v in inputs.items()}

    def __call__(self, signature, feeds) -> dict:
        if self.loader == "session":
            sig = self.meta.signature_def[signature]
            return self.session.run({k: v.name for k, v in sig.outputs.items()},
                                    {sig.inputs[k].name: v for k, v in feeds.items()})
        result = self.loaded.signatures[signature](**{k: tf.constant(v) for k, v in feeds.items()})
        return {k: v.numpy() for k, v in result.items()}
