"""`txl_tf.loss.loss_report`: the unit of each level, its decimals, its JSON fields and the verdict
against the unigram baseline; the training console line uses them."""
import math

import pytest

from txl_tf.loss import loss_report
from txl_tf.training.reporting.tensorboard import RunSummaries


@pytest.mark.parametrize("level,unit", [("byte", "bpc"), ("char", "bpc"), ("word", "ppl"),
                                        (None, "bits_per_token"), ("bpe", "bits_per_token")])
def test_each_level_has_its_unit(level, unit):
    loss = 1.7
    assert loss_report.unit_name(level) == unit
    expected = math.exp(loss) if unit == "ppl" else loss / math.log(2)
    assert loss_report.unit_value(loss, level) == pytest.approx(expected, rel=1e-12)
    assert loss_report.loss_fields(loss, level, "valid_") == {
        "valid_loss": loss, f"valid_{unit}": pytest.approx(expected, rel=1e-12)}
    assert loss_report.loss_fields(None, level) == {"loss": None, unit: None}


def test_perplexity_has_two_decimals_bits_four():
    loss = 8.041234
    assert loss_report.format_loss(loss, "word") == f"loss 8.0412 | ppl {math.exp(loss):.2f}"
    assert loss_report.format_value(loss, "char") == f"bpc {loss / math.log(2):.4f}"
    assert loss_report.format_value(loss, None) == f"bits_per_token {loss / math.log(2):.4f}"
    line = RunSummaries("unused", "word", enabled=False).console(50, 600, loss, 1e-3, 1500.0, 60)
    assert f"| loss 8.0412 | ppl {math.exp(loss):.2f} | lr" in line
    assert f"{math.exp(loss):.4f}" not in line


def test_verdict_only_when_the_loss_is_not_below_the_baseline():
    assert loss_report.verdict(5.0, 5.2, "word", "valid") is None
    assert loss_report.verdict(None, 5.2, "word", "valid") is None
    assert loss_report.verdict(5.0, None, "word", "valid") is None
    line = loss_report.verdict(7.4, 6.7, "word", "valid")
    assert line.startswith("verdict: the model does not beat counting words: its valid loss "
                           f"7.4000 (ppl {math.exp(7.4):.2f}) is not below the unigram entropy "
                           f"of the valid words, 6.7000 (ppl {math.exp(6.7):.2f}); ")
    for advice in ("--train_steps", "--min_freq", "--level=char", "more text"):
        assert advice in line
    equal = loss_report.verdict(3.0, 3.0, "char", "training")
    assert "its training loss 3.0000 (bpc" in equal and "counting characters:" in equal
    assert "--level=char" not in equal and len(equal.splitlines()) == 1


def _facts(**changes):
    info = {"level": "word", "vocab_size": 1000, "unk_symbol": "<unk>",
            "num_tokens": {"train": 40_000, "valid": 2_000}, "unk_tokens": {"valid": 60}}
    info.update(changes)
    return loss_report.CorpusFacts.from_info(info)


def test_word_level_is_starved_by_few_tokens_per_type_or_many_unknown_words():
    assert loss_report.starved_word_level(_facts()) is None  # 40 per type, 3.0% <unk>
    few = loss_report.starved_word_level(_facts(num_tokens={"train": 7_300, "valid": 2_000}))
    assert few == "7.3 training tokens per word type (a word model needs 20 or more)"
    unknown = loss_report.starved_word_level(_facts(unk_tokens={"valid": 412}))
    assert unknown == "20.6% of the valid words are <unk> (more than 5%)"
    both = loss_report.starved_word_level(_facts(num_tokens={"train": 7_300, "valid": 2_000},
                                                 unk_tokens={"valid": 412}))
    assert both == few + " and " + unknown
    assert loss_report.starved_word_level(_facts(level="char", unk_tokens={"valid": 412})) is None
    assert loss_report.CorpusFacts.from_info({"level": "word"}) is None  # no sizes recorded


def test_corpus_verdict_says_the_margin_and_names_char_level():
    starved = _facts(unk_tokens={"valid": 412})
    line = loss_report.corpus_verdict(4.544, 4.736, starved)
    assert line.startswith("verdict: this corpus is too small for word level: 20.6% of the "
                           "valid words are <unk>")
    assert "its valid loss 4.5440 is only 0.1920 nats below the unigram entropy of the valid " \
           "words (4.7360)" in line
    assert "--level=char" in line
    # Not below counting: the usual verdict (train longer ...), with the corpus' reason.
    assert loss_report.corpus_verdict(4.9, 4.736, starved) is None
    line = loss_report.verdict(4.9, 4.736, "word", "valid", starved)
    assert line.startswith("verdict: the model does not beat counting words")
    assert line.endswith(" This corpus is also too small for word level: 20.6% of the valid "
                         "words are <unk> (more than 5%).")
    assert loss_report.corpus_verdict(4.544, 4.736, _facts()) is None  # not starved
    # Clearly below counting words (ppl 60 against 130): the corpus serves word level.
    assert loss_report.corpus_verdict(4.10, 4.87, starved) is None
    assert loss_report.corpus_verdict(4.736 - 0.4999, 4.736, starved) is not None
