"""The memory of a generation is estimated for the path that will run
(`memory_fit.check_generation_fits`): the graph loop reads segments of at most the prompt and a
memory that grows to prompt + new tokens; the compiled program a fixed-size memory of mem_len
and the prompt padded to its bucket. The refusal names the flags that set them."""
import pytest

import txl_tf
from txl_tf.generation.buckets import prompt_bucket
from txl_tf.generation.memory_fit import check_generation_fits
from txl_tf.model.memory_estimate import MemoryEstimateError, step_memory_bytes

CONFIG = txl_tf.TransformerXLConfig(n_token=50, n_layer=2, d_model=16, n_head=2, d_head=8,
                                    d_inner=32, tgt_len=64, mem_len=100_000)


def test_the_compiled_path_counts_its_fixed_memory_and_the_graph_loop_its_context():
    prompt, new = 10, 5
    graph = step_memory_bytes(CONFIG, 1, tgt_len=prompt, mem_len=prompt + new)
    compiled = step_memory_bytes(CONFIG, 1, tgt_len=prompt_bucket(prompt, 64)[0],
                                 mem_len=CONFIG.mem_len)
    between = (graph + compiled) // 2
    assert graph < between < compiled
    check_generation_fits(CONFIG, prompt, new, available=between)  # the graph loop fits
    with pytest.raises(MemoryEstimateError,
                       match=r"\(compiled generation\).*lower --mem_len, --seg_len or fewer "
                             r"prompts at once") as caught:
        check_generation_fits(CONFIG, prompt, new, compiled=True, available=between)
    assert "\n" not in str(caught.value)


def test_a_hostile_d_model_names_the_config_field():
    from txl_tf.model.memory_estimate import check_weights_fit
    config = CONFIG.replace(d_model=2 * 10**8, mem_len=8)
    with pytest.raises(MemoryEstimateError, match=r"m/config.json sets them: lower d_model"):
        check_weights_fit(config, available=2**30, source="m/config.json")
    check_weights_fit(CONFIG, available=2**30)  # a small model fits
