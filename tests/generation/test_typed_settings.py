"""The settings of generation travel typed (the sampling values as one `Sampler`, the memory
settings as one `ContextSettings`; the parameter counts: tests/repository/test_function_size.py),
and a `Sampler` holds either checked Python numbers or the graph's tensors."""
import numpy as np
import pytest
import tensorflow as tf

from txl_tf.generation.errors import CausalLMInputError
from txl_tf.generation.generator import sampler_tensors
from txl_tf.generation.sampler import Sampler

def test_a_sampler_of_tensors_is_the_graphs_and_any_other_value_is_checked():
    graph = sampler_tensors(np.array([0.5, 0.0], np.float32), 3, 0.9, 7)
    assert graph.temperature.dtype == tf.float32 and graph.seed.dtype == tf.int64
    np.testing.assert_array_equal(graph.temperature.numpy(), [0.5, 0.0])
    with pytest.raises(CausalLMInputError, match="temperature must be a number"):
        Sampler(tf.constant(0.5), 3, 0.9, 7)  # one tensor among numbers: refused as before
    with pytest.raises(CausalLMInputError, match="top_p must be in"):
        Sampler(0.5, 3, 0.0, 7)
