"""`txl_tf.loss_report`: the unit of each level, its decimals, its JSON fields and the verdict
against the unigram baseline; the training console line uses them."""
import math

import pytest

from txl_tf import loss_report
from txl_tf.training.summaries import RunSummaries


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
