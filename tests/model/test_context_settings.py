"""ContextSettings: the config's run settings with overrides, and each out-of-range value
refused with its name."""
import pytest

from txl_tf.model.config import TransformerXLConfig
from txl_tf.model.context_settings import ContextSettings, ContextSettingsError


def test_of_config_takes_the_config_and_the_overrides_given():
    config = TransformerXLConfig(n_token=11, tgt_len=5, mem_len=7, clamp_len=3)
    assert ContextSettings.of_config(config) == ContextSettings(5, 7, 3, False)
    assert ContextSettings.of_config(config, mem_len=0, same_length=True) == \
        ContextSettings(5, 0, 3, True)
    assert ContextSettings(5, 7).replace(clamp_len=-1).clamp_len == -1


@pytest.mark.parametrize("field,value", [("tgt_len", 0), ("mem_len", -1), ("clamp_len", -2),
                                         ("tgt_len", 2**31), ("same_length", 1)])
def test_a_value_out_of_range_is_refused_by_name(field, value):
    with pytest.raises(ContextSettingsError, match=field):
        ContextSettings(**{field: value})
