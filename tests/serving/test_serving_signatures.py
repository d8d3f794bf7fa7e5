"""The signature records (`txl_tf/serving/signatures.py`) agree with what reads them: the
`ServingModule`'s tf.functions, the warmup requests, the limits and the export's count."""
import dataclasses
import inspect

import numpy as np
import pytest
import tensorflow as tf

from tiny import tiny_model
from txl_tf.serving import signatures, warmup
from txl_tf.serving.limits import ServingLimits
from txl_tf.model.context_settings import ContextSettings
from txl_tf.serving.module import ServingModule
from txl_tf.serving.serving_settings import ServingSettings


class DigitCodec(tf.Module):
    """A text codec for the records' warmup texts: ids as space-separated digits."""

    def encode(self, text, continuing):
        del continuing
        return tf.strings.to_number(tf.strings.split(text), tf.int32)

    def decode(self, ids):
        return tf.strings.reduce_join(tf.strings.as_string(ids), separator=" ")


@pytest.fixture(scope="module")
def modules():
    """(a module with the text signatures, one without) of a one-layer model: the records'
    specs, names and warmup requests are what is checked, not how layers stack (every layer
    adds to the tracing of every signature)."""
    model = tiny_model(n_layer=1)
    settings = ServingSettings(ContextSettings(tgt_len=4, mem_len=3, clamp_len=8),
                               gen_mem_len=5, gen_seg_len=2)
    return (ServingModule(model, settings, text_codec=DigitCodec()),
            ServingModule(model, settings))


def test_the_module_serves_every_record_under_its_names(modules):
    with_text, ids_only = modules
    assert sorted(with_text.signatures()) == sorted(
        n for s in signatures.SIGNATURES for n in (s.name,) + s.aliases)
    assert len(with_text.signatures()) == signatures.signature_count() == 7
    assert sorted(ids_only.signatures()) == sorted(
        n for s in signatures.SIGNATURES if not s.text for n in (s.name,) + s.aliases)
    assert with_text.signatures()["serving_default"] is with_text.score


@pytest.mark.parametrize("record", signatures.SIGNATURES, ids=lambda s: s.name)
def test_specs_follow_the_method_arguments(modules, record):
    module = modules[0]
    specs = record.specs(module.config)
    arguments = list(inspect.signature(getattr(module, record.method)).parameters)
    assert [spec.name for spec in specs] == arguments
    assert getattr(module, record.name).input_signature == tuple(specs)


@pytest.mark.parametrize("record", signatures.SIGNATURES, ids=lambda s: s.name)
@pytest.mark.parametrize("batch", [1, 3])
def test_the_warmup_request_fits_the_specs_and_runs(modules, record, batch):
    module = modules[0]
    inputs = warmup.signature_inputs(module, record.name, batch)
    specs = {spec.name: spec for spec in record.specs(module.config)}
    assert list(inputs) == list(specs)
    for name, value in inputs.items():
        tensor = tf.constant(value)
        assert specs[name].is_compatible_with(tensor), (name, tensor)
        assert tensor.shape[0] == batch
    outputs = module.signatures()[record.name](**{k: tf.constant(v) for k, v in inputs.items()})
    assert all(np.asarray(v).shape[0] == batch for v in outputs.values())


def test_every_limit_is_checked_by_some_signature():
    checked = {name for record in signatures.SIGNATURES for name in record.limits}
    assert checked == {field.name for field in dataclasses.fields(ServingLimits)}


def test_an_unknown_name_is_one_clear_line():
    with pytest.raises(ValueError, match=r"no serving signature named 'scores'; the "
                                         r"signatures are generate, generate_text, "):
        signatures.by_name("scores")
    assert signatures.by_name("serving_default").name == "score"


def test_an_export_with_warmup_requests_traces_each_signature_once(tmp_path):
    """`write_saved_model` runs the warmup requests before the save, in the context the save
    traces in: the save reuses their traces, so each signature is traced once (it was twice),
    and the file holds every request."""
    from txl_tf.serving import saved_model_writer

    settings = ServingSettings(ContextSettings(tgt_len=4, mem_len=3, clamp_len=8),
                               gen_mem_len=5, gen_seg_len=2)
    module = ServingModule(tiny_model(n_layer=1), settings)
    functions = module.signatures()
    path = str(tmp_path / "1")
    saved_model_writer.write_saved_model(module, path, {"model_name": "m", "warmup_requests": 2})
    assert {name: f.experimental_get_tracing_count() for name, f in functions.items()} == {
        name: 1 for name in functions}
    warmup_file = tmp_path / "1" / saved_model_writer.WARMUP_FILE
    assert sum(1 for _ in tf.data.TFRecordDataset(str(warmup_file))) == 2 * len(functions)
    assert sorted(tf.saved_model.load(path).signatures) == sorted(functions)
