"""The settings of generation travel typed: no function of txl_tf/generation/ takes more than 8
parameters (the sampling values travel as one `Sampler`, the memory settings as one
`ContextSettings`), and a `Sampler` holds either checked Python numbers or the graph's
tensors."""
import ast
import os

import numpy as np
import pytest
import tensorflow as tf

from txl_tf.generation.errors import CausalLMInputError
from txl_tf.generation.generator import sampler_tensors
from txl_tf.generation.sampler import Sampler

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MOST = 8


def wide_functions(source, name="<source>"):
    """`name:line function (n parameters)` of every function or lambda of more than MOST
    parameters (self and cls not counted)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
            names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
            if names[:1] in (["self"], ["cls"]):
                names = names[1:]
            if len(names) > MOST:
                found.append(f"{name}:{node.lineno} {getattr(node, 'name', 'lambda')} "
                             f"({len(names)} parameters)")
    return found


def test_no_generation_function_takes_more_than_eight_parameters():
    folder = os.path.join(REPO, "txl_tf", "generation")
    found = []
    for file in sorted(os.listdir(folder)):
        if file.endswith(".py"):
            with open(os.path.join(folder, file), encoding="utf-8") as f:
                found += wide_functions(f.read(), f"txl_tf/generation/{file}")
    assert not found, "pass a Sampler or ContextSettings instead:\n" + "\n".join(found)


def test_the_count_sees_a_wide_function():
    source = ("def f(a, b, c, d, e, f, g, h, i): pass\n"
              "class C:\n    def m(self, a, b, c, d, e, f, g, h): pass\n")
    assert wide_functions(source) == ["<source>:1 f (9 parameters)"]


def test_a_sampler_of_tensors_is_the_graphs_and_any_other_value_is_checked():
    graph = sampler_tensors(np.array([0.5, 0.0], np.float32), 3, 0.9, 7)
    assert graph.temperature.dtype == tf.float32 and graph.seed.dtype == tf.int64
    np.testing.assert_array_equal(graph.temperature.numpy(), [0.5, 0.0])
    with pytest.raises(CausalLMInputError, match="temperature must be a number"):
        Sampler(tf.constant(0.5), 3, 0.9, 7)  # one tensor among numbers: refused as before
    with pytest.raises(CausalLMInputError, match="top_p must be in"):
        Sampler(0.5, 3, 0.0, 7)
