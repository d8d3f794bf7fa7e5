"""Generating text from a prompt with a model directory: `GenerateOptions` -> result dict.

`generate_text(options, data, out)` tokenizes the prompt with the model's text rules (the
`ModelText` of `data`, a `txl_tf.model.data_interfaces.TextData`), runs a
`txl_tf.generation.generator.Generator`, writes the continuation to `out` as it is generated
and returns what runners/generate.py prints as JSON, compact: {"prompt_tokens", "tokens",
"seconds", "tokens_per_second", "seg_len", "mem_len", "clamp_len", "same_length", "jit_compile"
(whether XLA compiled the loop), sampling settings, "checkpoint", "checkpoint_name",
"checkpoint_step"}, and "ids" (the generated ids) with `output_ids`. The text itself is what
was written to `out`: the prompt as given, then its continuation; a continuation of nothing
but line ends and the unknown symbol gets one `note:` line on stderr saying why
(`empty_text_note`).
"""
import sys
import time
from typing import Optional

import numpy as np

from txl_tf.storage import model_files
from txl_tf.commands.generate_options import GenerateInputError, GenerateOptions  # noqa: F401
from txl_tf.runtime.ranges import check_fields
from txl_tf.commands.inference_model import load_inference_model
from txl_tf.generation.generator import Generator
from txl_tf.loss.loss_report import CorpusFacts, starved_word_level
from txl_tf.model.data_interfaces import ModelText, TextData
from txl_tf.storage.text_files import read_text_file
from txl_tf.devices.choices import JitCompile


def check_options(options: GenerateOptions) -> None:
    """Raises GenerateInputError for a missing or out-of-range option."""
    o = options
    if not o.model_dir:
        raise GenerateInputError("--model_dir is required.")
    if (o.prompt is None) == (o.prompt_file is None):
        raise GenerateInputError("give exactly one of --prompt or --prompt_file.")
    check_fields(o, GenerateInputError, prefix="--")  # GenerateOptions.RANGES
    try:
        JitCompile.parse(o.jit_compile)
    except ValueError as error:
        raise GenerateInputError(str(error)) from None


def prompt_of(options: GenerateOptions) -> str:
    """The prompt text (of --prompt or --prompt_file)."""
    if options.prompt_file:
        return read_text_file(options.prompt_file, f"--prompt_file={options.prompt_file}",
                              GenerateInputError)
    return options.prompt


def prompt_ids(text: str, rules: ModelText):
    """The prompt's ids; a warning on stderr names the symbols read as unk."""
    ids = rules.encode(text)
    unknown = rules.unknown_symbols(text)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        print(f"warning: {len(unknown)} prompt {rules.level}(s) not in the model's vocabulary, "
              f"read as {rules.unk_symbol}: {shown}", file=sys.stderr, flush=True)
    if len(ids) == 0:
        raise GenerateInputError("the prompt has no tokens; give at least one symbol.")
    return ids


def _sample(gen, prompt, options, streamer, settings, out) -> list:
    """The generated ids, their text written to `out` (as they come with --stream)."""
    if options.stream:
        generated = []
        for token in gen.stream(prompt, options.num_tokens, **settings):
            generated.append(int(token[0]))
            out.write(streamer.push(token[0]))
            out.flush()
    else:
        generated = [int(t) for t in gen.generate(prompt, options.num_tokens, **settings)[0]]
        for token in generated:
            streamer.push(token)
        out.write(streamer.printed)
    out.write(streamer.finish() + "\n")
    return generated


def empty_text_note(prompt, generated: list, rules: ModelText,
                    model_dir: str) -> Optional[str]:
    """The line saying why, when the generated tokens are only line ends, spaces and the unknown
    symbol (a word-level model of too little text does that), else None.

    Args:
      prompt: the prompt's ids (the text of the generated ones follows them).
      generated: the generated ids.
      rules: the model's `ModelText`.
      model_dir: the model directory (its corpus-info.json gives the corpus' size).
    """
    if not generated:
        return None
    streamer = rules.streamer(prompt)
    text = "".join(streamer.push(token) for token in generated) + streamer.finish()
    if rules.unk_symbol:
        text = text.replace(rules.unk_symbol, "")
    if text.strip():
        return None
    unk = rules.unk_symbol or "unknown symbols"
    why = starved_word_level(CorpusFacts.from_model_dir(model_dir))
    advice = (f"its corpus is too small for word level ({why}): train at character level "
              "(prepare_data.py --level=char)" if why else
              "see the verdict of its training run: train longer or on more text")
    return (f"note: the model generated only line ends, spaces and {unk} ({len(generated)} "
            f"tokens): it predicts little beyond the most frequent tokens; {advice}.")


def generate_text(options: GenerateOptions, data: TextData, out=sys.stdout) -> dict:
    """Generates `options.num_tokens` tokens after the prompt, writing the prompt and then
    them to `out`.

    Args:
      options: the `GenerateOptions`.
      data: the `TextData` (`txl_tf/model/data_interfaces.py`;
        `tf_records.model_data.ModelData`) that gives the model's `ModelText` (its vocabulary checked against config.n_token).
      out: where the continuation is written.

    Returns:
      The result dict (see the module docstring).

    Raises:
      GenerateInputError: bad options or an empty prompt. ModelDirError: no model.
    """
    check_options(options)
    text = prompt_of(options)
    config = model_files.load_config(options.model_dir)
    rules = data.model_text(options.model_dir, config.n_token, options.vocab_file)
    ids = prompt_ids(text, rules)
    choice = model_files.choose_checkpoint(options.model_dir, options.checkpoint)
    model = load_inference_model(options.model_dir, choice)
    gen = Generator(model, seg_len=options.seg_len, mem_len=options.mem_len,
                    clamp_len=options.clamp_len, same_length=options.same_length,
                    jit_compile="false" if options.stream else options.jit_compile)
    settings = dict(temperature=options.temperature, top_k=options.top_k,
                    top_p=options.top_p, seed=options.seed)
    streamer = rules.streamer(ids)
    out.write(text)  # the prompt, then its continuation as it comes
    out.flush()
    start = time.time()
    generated = _sample(gen, np.asarray(ids, np.int32)[None], options, streamer, settings, out)
    seconds = time.time() - start
    note = empty_text_note(ids, generated, rules, options.model_dir)
    if note:
        print(note, file=sys.stderr, flush=True)
    return {"prompt_tokens": len(ids), "tokens": len(generated),
            **({"ids": generated} if options.output_ids else {}), "seconds": round(seconds, 3),
            "tokens_per_second": round(len(generated) / seconds, 1) if seconds > 0 else None,
            "seg_len": gen.seg_len, "mem_len": gen.mem_len, "clamp_len": gen.clamp_len,
            "same_length": gen.same_length, "jit_compile": gen.jit_compile, **settings,
            **choice.to_json()}
