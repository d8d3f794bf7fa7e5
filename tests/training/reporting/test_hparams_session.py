"""Every training run is a session of TensorBoard's HPARAMS dashboard, read back through
TensorBoard's own reader: its event multiplexer, data provider and hparams plugin, asked as the
dashboard asks (`/experiment`, `/session_groups`).

Two tiny runs with different learning rates under one root (as the ablation's variants): two
session groups named as the runs, with the model configuration and run options as
hyperparameters and the final train/valid loss and ppl as metrics, equal to the run summaries;
each run's header names it. The runs are without XLA (`jit_compile="false"`): its compilation of
the step was most of each run and changes nothing TensorBoard reads.
"""
import contextlib
import io
import json
import os
import shutil

import pytest
from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import hparams_plugin
from werkzeug import test as werkzeug_test
from werkzeug import wrappers

from tf_records import DataOptions, PreparedData
from tiny import SYNTHETIC, TRAIN_SIZES, train_config
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainOptions

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py
RATES = {"a": 3e-3, "b": 1e-2}
# One layer: what TensorBoard reads does not depend on the stacking of layers (n_layer is
# still a hyperparameter read back).
MODEL = dict(TRAIN_SIZES, n_layer=1)
STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]


def ask(logdir, route, request):
    """The hparams plugin's JSON answer to `request` on `route`, over `logdir`."""
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    context = base_plugin.TBContext(
        logdir=logdir, multiplexer=multiplexer, plugin_name_to_instance={},
        data_provider=data_provider.MultiplexerDataProvider(multiplexer, logdir))
    app = hparams_plugin.HParamsPlugin(context).get_plugin_apps()[route]
    response = werkzeug_test.Client(app, wrappers.Response).post(route,
                                                                 data=json.dumps(request))
    assert response.status_code == 200, response.get_data(as_text=True)
    return json.loads(response.get_data(as_text=True))


def session_groups(logdir):
    return ask(logdir, "/session_groups", {"experimentName": "", "allowedStatuses": STATUSES,
                                           "startIndex": 0, "sliceSize": 100})["sessionGroups"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hparams")
    data = PreparedData(DataOptions(data_dir=str(root / "data"), dataset="synthetic",
                                    corpus_options=SYNTHETIC))
    summaries, headers = {}, []
    for name, rate in RATES.items():
        options = TrainOptions(model_dir=str(root / "runs" / name), per_host_train_bsz=4,
                               learning_rate=rate, warmup_steps=2, train_steps=4,
                               steps_per_loop=2, log_steps=2, save_steps=4, eval_steps=4,
                               max_eval_batches=2, jit_compile="false")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            summaries[name] = train(options, train_config(**MODEL), data, name=f"variant {name}")
        headers += [line for line in out.getvalue().splitlines()
                    if line.startswith("txl-tf training")]
    return str(root / "runs"), summaries, headers


def test_each_run_is_a_session_with_its_hparams_and_final_metrics(two_runs):
    logdir, summaries, headers = two_runs
    assert [h.split(":")[0] for h in headers] == [f"txl-tf training variant {name}"
                                                  for name in RATES]
    experiment = ask(logdir, "/experiment", {"experimentName": ""})
    metrics = [m["name"]["tag"] for m in experiment["metricInfos"]]
    assert metrics == ["hparams/train_loss", "hparams/valid_loss", "hparams/train_ppl",
                       "hparams/valid_ppl"]
    names = {h["name"] for h in experiment["hparamInfos"]}
    assert {"n_layer", "d_model", "learning_rate", "train_steps", "attn_type", "dataset",
            "level", "vocab_size"} <= names and "flags_text" not in names
    groups = {g["name"]: g for g in session_groups(logdir)}
    assert set(groups) == set(RATES)  # named after the run directories
    for name, rate in RATES.items():
        group, summary = groups[name], summaries[name]
        hparams = group["hparams"]
        assert hparams["learning_rate"] == pytest.approx(rate)
        assert hparams["n_layer"] == MODEL["n_layer"]
        assert hparams["d_model"] == MODEL["d_model"]
        assert hparams["dataset"] == "synthetic" and hparams["level"] == summary["level"]
        values = {m["name"]["tag"]: m for m in group["metricValues"]}
        for key in ("train_loss", "valid_loss", "train_ppl", "valid_ppl"):
            value = values[f"hparams/{key}"]
            assert value["value"] == pytest.approx(summary[key], rel=1e-5), key
            assert value["trainingStep"] == summary["step"]


def test_one_run_alone_is_a_session_too(two_runs):
    """`tensorboard --logdir MODEL_DIR`: the run directory itself is the session."""
    logdir, summaries, _ = two_runs
    [group] = session_groups(os.path.join(logdir, "a"))
    values = {m["name"]["tag"]: m["value"] for m in group["metricValues"]}
    assert values["hparams/valid_loss"] == pytest.approx(summaries["a"]["valid_loss"],
                                                         rel=1e-5)


def test_a_resumed_run_stays_one_session_with_the_latest_metrics(two_runs, tmp_path):
    """Training run "a" further (a copy, so the other tests keep theirs): still one session,
    the hyperparameters of its start, the metrics of its last step."""
    logdir, summaries, _ = two_runs
    copy = tmp_path / "runs" / "a"
    shutil.copytree(os.path.join(logdir, "a"), copy)
    data = PreparedData(os.path.join(os.path.dirname(logdir), "data"))
    options = TrainOptions(model_dir=str(copy), per_host_train_bsz=4, learning_rate=RATES["a"],
                           warmup_steps=2, train_steps=6, steps_per_loop=2, log_steps=2,
                           save_steps=2, eval_steps=2, max_eval_batches=2, jit_compile="false")
    with contextlib.redirect_stdout(io.StringIO()):
        resumed = train(options, train_config(**MODEL), data)
    assert resumed["resumed"] and resumed["step"] == 6
    [group] = session_groups(str(tmp_path / "runs"))
    assert group["name"] == "a" and group["hparams"]["train_steps"] == 4
    values = {m["name"]["tag"]: m for m in group["metricValues"]}
    assert values["hparams/valid_loss"]["trainingStep"] == 6
    assert values["hparams/valid_loss"]["value"] == pytest.approx(resumed["valid_loss"],
                                                                  rel=1e-5)
