r"""Generate text from a prompt with a txl-tf model, streaming tokens as they come.

Example:
  python runners/generate.py --model_dir=/ckpt/wt103 --prompt="The meaning of life is" \
      --num_tokens=200 --temperature=0.8 --top_k=40 --top_p=0.95 --seed=1 --mem_len=1600

The prompt is tokenized with the model's vocabulary (MODEL_DIR/vocab.txt + corpus-info.json),
consumed in segments of --seg_len with memory, then every new token costs one forward pass of
length 1 against the cached memory. The prompt is printed to stdout, then its continuation as
it is generated, followed by one compact JSON line: {"prompt_tokens", "tokens", "seconds", "tokens_per_second",
sampling settings, "checkpoint", "checkpoint_name", "checkpoint_step", ...}; --output_ids adds
"ids". --nostream generates everything in one graph call (a tf.while_loop) instead, with the
same tokens; --jit_compile=true (auto: on GPU and TPU) makes that call one XLA program (a
fixed-size memory; the prompt padded to a power of two, so that prompts of one bucket share a
compilation). --checkpoint=best uses MODEL_DIR/best/ (the best on validation), --checkpoint=ckpt-N
another kept checkpoint; one line on stderr names the checkpoint used.
"""
import json
import sys

from absl import app, flags

import txl_tf
from runners import cli
from runners.cli import dataclass_flags
from tf_records.model_data import ModelData
from txl_tf.commands.generate_options import GenerateInputError, GenerateOptions
from txl_tf.generation.call_bounds import check_generation
from txl_tf.storage.text_files import read_text_file
from txl_tf.devices.choices import JIT_COMPILE

FLAGS = flags.FLAGS


def define_flags(fv=flags.FLAGS) -> dict:
    """Defines the flags of this runner (only when it runs as a program, so that its
    functions can be imported beside other runners); returns the groups of --help."""
    dataclass_flags.define_flags(GenerateOptions, fv, enums={"jit_compile": JIT_COMPILE})
    return {}


def run(options: GenerateOptions, out=sys.stdout) -> dict:
    """Generates what `options` describe, the text to `out`; returns the result dict."""
    cli.quiet_start()
    # TensorFlow loads here, after the flags were checked: --help and usage errors come at once.
    from txl_tf.commands.generate import generate_text
    return generate_text(options, ModelData(), out)


def prompt_length(options) -> int:
    """Characters of the prompt; GenerateInputError when --prompt_file is not a regular UTF-8
    file of a bounded size."""
    if not options.prompt_file:
        return len(options.prompt or "")
    return len(read_text_file(options.prompt_file, f"--prompt_file={options.prompt_file}",
                              GenerateInputError))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    o = dataclass_flags.options_from_flags(GenerateOptions, FLAGS)
    cli.check_directories(model_dir=o.model_dir)
    cli.check_files(vocab_file=o.vocab_file, prompt_file=o.prompt_file)
    cli.check_model_dirs(model_dir=o.model_dir)
    check_generation(o.num_tokens, o.top_k, o.seed, GenerateInputError, prefix="--")
    prompt_chars = prompt_length(o)
    if o.model_dir:
        cli.quiet_start()  # load_config reads the model directory with TensorFlow
        from txl_tf.generation.memory_fit import check_generation_fits
        from txl_tf.model.context_settings import ContextSettings
        from txl_tf.model.memory_estimate import check_weights_fit
        from txl_tf.devices.step_compilation import choose_generation
        config = txl_tf.load_config(o.model_dir)
        check_weights_fit(config, source=f"{o.model_dir}/config.json")
        compiled = not o.stream and choose_generation(o.jit_compile).mode is not None
        context = ContextSettings.of_config(config, tgt_len=o.seg_len, mem_len=o.mem_len)
        check_generation_fits(config, prompt_chars, o.num_tokens, context, compiled=compiled)
    print(json.dumps(run(o)), flush=True)
    return 0


if __name__ == "__main__":
    cli.run(main, groups=define_flags(), required=("model_dir",))
