"""Generate text from a prompt with a txl-tf model, streaming tokens as they come.

Example:
  python runners/generate.py --model_dir=/ckpt/wt103 --prompt="The meaning of life is" \
      --num_tokens=200 --temperature=0.8 --top_k=40 --top_p=0.95 --seed=1 --mem_len=1600

The prompt is tokenized with the model's vocabulary (MODEL_DIR/vocab.txt + corpus-info.json),
consumed in segments of --seg_len with memory, then every new token costs one forward pass of
length 1 against the cached memory. The continuation is printed to stdout as it is generated,
followed by one JSON line: {"prompt_tokens", "tokens", "ids", "text", "seconds",
"tokens_per_second", sampling settings, ...}. --nostream generates everything in one graph call
(a tf.while_loop) instead, with the same tokens.
"""
import codecs
import json
import os
import sys
import time

from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS


def define_flags():
    """Defines the flags of this runner (only when it runs as a program, so that its
    functions can be imported beside other runners)."""
    flags.DEFINE_string("model_dir", None, "Model directory (config.json, checkpoints, vocab.txt, "
                        "corpus-info.json).")
    flags.DEFINE_string("prompt", None, "Prompt text.")
    flags.DEFINE_string("prompt_file", None, "Read the prompt from this file instead.")
    flags.DEFINE_string("vocab_file", None, "Vocabulary (default MODEL_DIR/vocab.txt).")
    flags.DEFINE_integer("num_tokens", 100, "Number of tokens to generate.")
    flags.DEFINE_float("temperature", 1.0, "Sampling temperature; 0 = greedy (argmax).")
    flags.DEFINE_integer("top_k", 0, "Keep only the k most likely tokens (0 = all).")
    flags.DEFINE_float("top_p", 1.0, "Nucleus sampling: smallest set with this much probability "
                       "(1.0 = all).")
    flags.DEFINE_integer("seed", 0, "Random seed (token t uses the stateless seed (seed, t)).")
    flags.DEFINE_integer("seg_len", None, "Prompt segment length (default: the model's tgt_len).")
    flags.DEFINE_integer("mem_len", None, "Memory length (default: the model's mem_len). Context "
                         "beyond it is seen only through the memory's recurrence.")
    flags.DEFINE_integer("clamp_len", None, "Clamp relative distances (default: the model's).")
    flags.DEFINE_boolean("same_length", False, "Same attention length for every query.")
    flags.DEFINE_boolean("stream", True, "Print tokens as they are generated.")


class GenerateInputError(ValueError):
    """Bad generation input."""


def prompt_ids(text, mv):
    """Prompt text -> int32 ids with the model's rules. For word-level corpora with an
    end-of-line symbol, the symbol of a last line that does not end with a newline is dropped
    (the prompt continues that line)."""
    from tf_records.tokenize import encode_text

    ids = encode_text(text, mv.rules, mv.vocab)
    marker = mv.rules.double_eos or mv.rules.eos
    if (mv.level == "word" and marker and len(ids) and not text.endswith(("\n", "\r"))
            and ids[-1] == mv.vocab.id_of(marker)):
        ids = ids[:-1]
    return ids


def unknown_prompt_symbols(text, mv):
    """The distinct symbols of the prompt that the model's vocabulary lacks (they map to its
    unk symbol), in order of appearance; [] for byte-level models (every byte is known)."""
    from tf_records.tokenize import word_symbols

    if mv.level == "byte":
        return []
    if mv.level == "word":
        symbols = [w for line in text.splitlines() for w in word_symbols(line, mv.rules)]
    else:
        symbols = list(text.lower() if mv.rules.lower_case else text)
    return list(dict.fromkeys(s for s in symbols if s not in mv.vocab and s not in "\r\n"))


class TextStreamer:
    """Turns the ids generated so far into the new text to print (UTF-8 safe for bytes)."""

    def __init__(self, mv, prompt):
        from tf_records.tokenize import decode_ids

        self.mv, self.prompt, self.decode = mv, list(prompt), decode_ids
        self.ids = []
        self.utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.printed = ""
        self.base = decode_ids(self.prompt, mv.rules, mv.vocab) if mv.level != "byte" else ""

    def push(self, token) -> str:
        self.ids.append(int(token))
        if self.mv.level == "byte":
            piece = self.utf8.decode(self.mv.vocab.decode([int(token)]))
        else:
            full = self.decode(self.prompt + self.ids, self.mv.rules, self.mv.vocab)
            text = full[len(self.base):] if full.startswith(self.base) else full
            piece = text[len(self.printed):] if text.startswith(self.printed) else text
        self.printed += piece
        return piece

    def finish(self) -> str:
        if self.mv.level == "byte":
            piece = self.utf8.decode(b"", final=True)
            self.printed += piece
            return piece
        return ""


def run(f, out=sys.stdout):
    import numpy as np

    import txl_tf
    from tf_records import model_vocab
    from txl_tf.inference.generation import Generator

    if not f.model_dir:
        raise GenerateInputError("--model_dir is required.")
    if (f.prompt is None) == (f.prompt_file is None):
        raise GenerateInputError("give exactly one of --prompt or --prompt_file.")
    if f.num_tokens < 0:
        raise GenerateInputError(f"--num_tokens must be >= 0, got {f.num_tokens}.")
    if not 0.0 < f.top_p <= 1.0:
        raise GenerateInputError(f"--top_p must be in (0, 1], got {f.top_p}.")
    if f.top_k < 0:
        raise GenerateInputError(f"--top_k must be >= 0, got {f.top_k}.")
    if f.prompt_file:
        with open(f.prompt_file, encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = f.prompt
    config = txl_tf.load_config(f.model_dir)
    mv = model_vocab.load_model_vocab(f.model_dir, config.n_token, f.vocab_file)
    ids = prompt_ids(text, mv)
    unknown = unknown_prompt_symbols(text, mv)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        print(f"warning: {len(unknown)} prompt {mv.level}(s) not in the model's vocabulary, "
              f"read as {mv.vocab.unk_symbol}: {shown}", file=sys.stderr, flush=True)
    if len(ids) == 0:
        raise GenerateInputError("the prompt has no tokens; give at least one symbol.")
    model = txl_tf.load_model(f.model_dir, dropout=0.0, dropatt=0.0)
    gen = Generator(model, seg_len=f.seg_len, mem_len=f.mem_len, clamp_len=f.clamp_len,
                    same_length=f.same_length)
    settings = dict(temperature=f.temperature, top_k=f.top_k, top_p=f.top_p, seed=f.seed)
    prompt = np.asarray(ids, np.int32)[None]
    streamer = TextStreamer(mv, ids)
    start = time.time()
    if f.stream:
        generated = []
        for token in gen.stream(prompt, f.num_tokens, **settings):
            generated.append(int(token[0]))
            out.write(streamer.push(token[0]))
            out.flush()
    else:
        generated = [int(t) for t in gen.generate(prompt, f.num_tokens, **settings)[0]]
        for token in generated:
            streamer.push(token)
        out.write(streamer.printed)
    out.write(streamer.finish() + "\n")
    seconds = time.time() - start
    return {"prompt_tokens": len(ids), "tokens": len(generated), "ids": generated,
            "text": streamer.printed, "seconds": seconds,
            "tokens_per_second": len(generated) / seconds if seconds > 0 else None,
            "seg_len": gen.seg_len, "mem_len": gen.mem_len, "clamp_len": gen.clamp_len,
            "same_length": gen.same_length, **settings}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    cli.check_directories(model_dir=FLAGS.model_dir)
    cli.check_files(vocab_file=FLAGS.vocab_file)
    if FLAGS.mem_len is not None and FLAGS.mem_len < 1:
        raise GenerateInputError(f"--mem_len={FLAGS.mem_len}: generation keeps the context in "
                                 "the memory and needs --mem_len >= 1 (default: the model's).")
    prompt_chars = len(FLAGS.prompt or "")
    if FLAGS.prompt_file:
        try:
            with open(FLAGS.prompt_file, encoding="utf-8") as fh:
                prompt_chars = len(fh.read())
        except UnicodeDecodeError as error:
            raise GenerateInputError(
                f"--prompt_file={FLAGS.prompt_file} is not UTF-8 text (byte "
                f"{error.object[error.start]:#04x} at offset {error.start}); save it as UTF-8."
            ) from None
    if FLAGS.model_dir:
        import txl_tf
        from txl_tf.memory_estimate import check_step_fits
        config = txl_tf.load_config(FLAGS.model_dir)
        mem_len = config.mem_len if FLAGS.mem_len is None else FLAGS.mem_len
        seg_len = config.tgt_len if FLAGS.seg_len is None else FLAGS.seg_len
        # Segments never exceed the prompt; the memory grows up to the whole context.
        check_step_fits(config, 1, tgt_len=min(seg_len, max(prompt_chars, 1)),
                        mem_len=min(mem_len, prompt_chars + max(FLAGS.num_tokens, 0)))
    result = run(FLAGS)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
