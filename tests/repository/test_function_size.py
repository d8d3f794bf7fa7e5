"""No function of the libraries and runners takes more than 8 parameters (CONTRIBUTING.md).

Settings that travel together are one typed value (`ContextSettings`, `ServingSettings`,
`StepSettings`, ...), not loose arguments. Every function and method of `txl_tf/`,
`tf_records/` and `runners/` is parsed with `ast`; its parameters are counted, positional,
keyword-only, *args and **kwargs included, `self` and `cls` excluded. The exceptions are named
below, each with its reason; an exception that no longer holds (gone, or 8 parameters or fewer)
fails too, so that the lists only shrink.
Under Bazel the files are those of the test's runfiles, i.e. the sources.
"""
import ast
import os

from package_files import REPO, modules
PACKAGES = ("txl_tf", "tf_records", "runners")
MOST = 8

# Signatures that mirror a convention outside this code; "path:Class.method" -> reason.
KERAS_CONFIG = "a Keras layer constructor: its parameters are its get_config() fields"
ALLOWED = {
    "txl_tf/layers/adaptive_embedding.py:AdaptiveEmbedding.__init__": KERAS_CONFIG,
    "txl_tf/layers/adaptive_softmax.py:AdaptiveSoftmax.__init__": KERAS_CONFIG,
    "txl_tf/layers/relative_attention.py:RelativeMultiHeadAttention.__init__": KERAS_CONFIG,
    "txl_tf/layers/transformer_xl_block.py:TransformerXLBlock.__init__": KERAS_CONFIG,
    "txl_tf/causal_lm/causal_lm.py:TransformerXLCausalLM.compile":
        "keras.Model.compile's keywords plus the step's, which get_compile_config() records "
        "one by one and compile_from_config() passes back",
    "txl_tf/causal_lm/task_methods.py:CausalLMTaskMethods.generate":
        "the Keras model's public generate: keras-hub's keywords (inputs, max_length, "
        "stop_token_ids, strip_prompt) plus sampler, seed and the run settings users pass by "
        "name; it builds one Sampler and one ContextSettings at its door",
    "txl_tf/model/transformer_xl.py:TransformerXL.call":
        "the Keras call convention: the model's public call keywords (mem_len, clamp_len, "
        "same_length may be traced values in generation's compiled loops); a `context=` beside "
        "them would be a second spelling of the same settings",
}

def parameter_count(function: ast.AST) -> int:
    """The parameters of a `def`, `self` and `cls` not counted."""
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return len([n for n in names if n not in ("self", "cls")])


def functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function in `tree`, methods as Class.method and nested
    functions as outer.inner."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, prefix + node.name + ".")
        else:
            yield from functions(node, prefix)


def too_long() -> dict:
    """"path:qualified name" -> parameter count of every function with more than `MOST`."""
    found = {}
    for path in (p for package in PACKAGES for p in modules(package)):
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for name, node in functions(tree):
            count = parameter_count(node)
            if count > MOST:
                found[f"{path}:{name}"] = count
    return found


def test_no_function_takes_more_than_eight_parameters():
    found = too_long()
    offenders = [f"{key} takes {n}" for key, n in sorted(found.items())
                 if key not in ALLOWED]
    assert not offenders, (
        f"more than {MOST} parameters: {offenders}; group the settings that travel together "
        "into a typed value (e.g. txl_tf/model/context_settings.py)")
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"exceptions that no longer take more than {MOST} parameters: {stale}"


def test_the_count_covers_every_kind_of_parameter():
    tree = ast.parse("class A:\n"
                     "    def m(self, a, /, b, *c, d, **e):\n"
                     "        def inner(cls, x=1):\n"
                     "            pass\n"
                     "def f(a, b, c, d, e, f, g, h, i):\n"
                     "    pass\n")
    counted = {name: parameter_count(node) for name, node in functions(tree)}
    assert counted == {"A.m": 5, "A.m.inner": 1, "f": 9}
