"""`--strategy` name -> `tf.distribute.Strategy`, shared by every runner.

Names: `default` (no distribution; the default strategy), `one_device` (`--devices` or the first
GPU, else the CPU), `mirrored` (all local GPUs, or the devices of `--devices`),
`multi_worker_mirrored` (cluster from the `TF_CONFIG` environment variable), `tpu` (`--tpu`
address, '' or 'local' for a TPU VM), and `auto` (what the paper's recipes use: a TPU when
`--tpu` is given or one is attached to this machine, else all local GPUs, else the CPU; see
`resolve_auto`).
"""
import glob
import json
import os
import socket
import threading
import time
import urllib.parse
from typing import NamedTuple, Optional, Sequence

import tensorflow as tf

from txl_tf.devices.choices import STRATEGIES


class StrategyError(ValueError):
    """A strategy that cannot be created as asked."""


class TPUConnectError(StrategyError):
    """The TPU of `--tpu` did not answer within the timeout (exit code 1: a failure during the
    work; the address may be right and the TPU not up yet)."""
    exit_code = 1


TPU_CONNECT_SECONDS = 300  # default of --tpu_timeout: a TPU VM or pod slice may still be booting


class Choice(NamedTuple):
    """What `--strategy=auto` resolved to: a strategy name, its `tpu` argument and why."""
    name: str
    tpu: Optional[str]
    reason: str


def attached_tpu() -> Optional[str]:
    """The `--tpu` value of a TPU this machine has without connecting anywhere, or None.

    'local' on a Cloud TPU VM (its chips appear as /dev/accel* or as TensorFlow TPU devices);
    the `TPU_NAME` environment variable of a TPU node set-up. Nothing is contacted, so this
    returns at once on any machine.
    """
    if os.environ.get("TPU_NAME"):
        return os.environ["TPU_NAME"]
    if glob.glob("/dev/accel[0-9]*") or tf.config.list_physical_devices("TPU"):
        return "local"
    return None


def resolve_auto(tpu: Optional[str] = None, devices: Optional[Sequence[str]] = None) -> Choice:
    """The strategy `--strategy=auto` runs with on this machine, and the reason in words.

    Order: `tpu` when `--tpu` is given or a TPU is attached (`attached_tpu`); else `mirrored`
    over `devices` when given, or over all local GPUs when there are several; `one_device` on
    the one GPU; else `default` (the CPU). The global batch is the same whatever is chosen.
    """
    if tpu:
        return Choice("tpu", tpu, f"--tpu={tpu} is given")
    found = attached_tpu()
    if found:
        return Choice("tpu", found, f"a TPU is attached to this machine (--tpu={found})")
    if devices:
        return Choice("mirrored", None, f"--devices={','.join(devices)}")
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) > 1:
        return Choice("mirrored", None, f"no --tpu given and no TPU attached; {len(gpus)} GPUs")
    if gpus:
        return Choice("one_device", None, "no --tpu given and no TPU attached; 1 GPU")
    return Choice("default", None, "no --tpu given, no TPU attached and no GPU: the CPU")


def _wait_for_address(tpu: str, timeout: float, deadline: float) -> None:
    """For a grpc://host:port `tpu`, retry a TCP connection until it is accepted or the deadline
    passes (`TPUConnectError` naming the last reason)."""
    address = urllib.parse.urlparse(tpu)
    if address.scheme != "grpc" or not address.hostname or not address.port:
        return
    reason = "no answer"
    while True:
        try:
            with socket.create_connection((address.hostname, address.port),
                                          timeout=max(0.1, min(5.0, deadline - time.time()))):
                return
        except OSError as error:
            reason = error.strerror or str(error) or type(error).__name__
        if time.time() >= deadline:
            raise TPUConnectError(_unreachable(tpu, reason, timeout))
        time.sleep(min(1.0, max(0.0, deadline - time.time())))


def _unreachable(tpu: str, reason: str, timeout: float) -> str:
    return (f"cannot reach the TPU at --tpu={tpu} ({reason}) within {timeout:g} s; check the "
            "address and that the TPU is up, or raise --tpu_timeout.")


def _connect_tpu(tpu: str, timeout: float) -> tf.distribute.Strategy:
    """The `TPUStrategy` of `tpu` (a name, grpc:// address or '' for the environment's), with
    one line announcing the wait and a `TPUConnectError` after `timeout` seconds."""
    print(f"connecting to TPU {tpu or '(from the environment)'} (up to {timeout:g} s; "
          "--tpu_timeout) ...", flush=True)
    deadline = time.time() + timeout
    _wait_for_address(tpu, timeout, deadline)
    result = {}

    def connect():  # gRPC retries an address that does not answer without end: bounded below
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
            result["strategy"] = tf.distribute.TPUStrategy(resolver)
        except Exception as error:  # noqa: BLE001 - raised again in the caller's thread
            result["error"] = error

    thread = threading.Thread(target=connect, daemon=True, name="tpu-connect")
    thread.start()
    thread.join(max(0.0, deadline - time.time()))
    if thread.is_alive():
        raise TPUConnectError(_unreachable(tpu, "no answer", timeout))
    if "error" in result:
        raise result["error"]
    return result["strategy"]


def create_strategy(name: str, tpu: Optional[str] = None,
                    devices: Optional[Sequence[str]] = None,
                    tpu_timeout: float = TPU_CONNECT_SECONDS) -> tf.distribute.Strategy:
    """The strategy `name` (one of `STRATEGIES`).

    Args:
      name: strategy name (`auto`: see `resolve_auto`).
      tpu: for `tpu`: 'local' (the chips of this TPU VM), a TPU or pod slice name,
        grpc://address, or '' / None (the TPU attached to this machine, see `attached_tpu`).
      devices: explicit device names for `one_device` (one) and `mirrored` (any number), e.g.
        ['/CPU:0', '/CPU:1'] for two logical CPUs.
      tpu_timeout: seconds to wait for a TPU by name or address (announced in one line).

    Raises:
      StrategyError: a strategy that cannot be created as asked; `TPUConnectError` when the
        TPU does not answer within `tpu_timeout`.
    """
    devices = list(devices or [])
    if name == "auto":
        choice = resolve_auto(tpu, devices)
        return create_strategy(choice.name, choice.tpu, devices, tpu_timeout)
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        if len(devices) > 1:
            raise StrategyError(f"--strategy=one_device takes one device, got {devices}.")
        if not devices:
            gpus = tf.config.list_logical_devices("GPU")
            devices = [gpus[0].name if gpus else "/CPU:0"]
        check_devices(devices)
        return tf.distribute.OneDeviceStrategy(devices[0])
    if name == "mirrored":
        check_devices(devices)
        return tf.distribute.MirroredStrategy(devices or None)
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            raise StrategyError(
                "--strategy=multi_worker_mirrored reads the cluster from the TF_CONFIG environment "
                "variable, which is not set (e.g. TF_CONFIG='{\"cluster\": {\"worker\": "
                "[\"host1:2222\", \"host2:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}').")
        try:
            json.loads(os.environ["TF_CONFIG"])
        except json.JSONDecodeError as error:
            raise StrategyError(f"TF_CONFIG is not valid JSON ({error}).") from None
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        tpu = tpu or attached_tpu()
        if not tpu:
            raise StrategyError(
                "--strategy=tpu needs --tpu=NAME (a TPU or pod slice name, grpc://address, or "
                "'local' on a TPU VM) and this machine has no TPU attached; give --tpu, or "
                "--strategy=auto to run on the GPUs or the CPU of this machine.")
        if tpu == "local":  # the TPU chips of this TPU VM, no TPU service involved
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
        else:  # a TPU (pod slice) by name or grpc:// address; '' = found from the environment
            return _connect_tpu(tpu, tpu_timeout)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise StrategyError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}.")


def worker_info(strategy: tf.distribute.Strategy):
    """(task_id, num_workers, is_chief) of this process. Single-process strategies: (0, 1, True).

    The chief writes checkpoints and summaries; in a multi-worker cluster it is worker 0 (or the
    task of type 'chief').
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 0, 1, True
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    spec = resolver.cluster_spec().as_dict()
    num_workers = sum(len(spec.get(kind, [])) for kind in ("chief", "worker"))
    is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0
                                         and "chief" not in spec)
    index = task_id + (1 if task_type == "worker" and "chief" in spec else 0)
    return index, max(num_workers, 1), is_chief


def input_hosts(strategy: tf.distribute.Strategy):
    """(num_hosts, replicas_per_host) of the strategy's input pipelines: the record layout it
    reads (`distribute_datasets_from_function` calls the input function once per host).

    TPUStrategy is one client that drives every host of a pod slice, yet each TPU host runs its
    own input pipeline for its own cores: (`extended.num_hosts`, `extended.num_replicas_per_host`),
    e.g. (4, 8) on a v3-32. MultiWorkerMirroredStrategy: (workers, local replicas). Every other
    strategy: (1, local replicas).
    """
    extended = strategy.extended
    if hasattr(extended, "num_hosts") and hasattr(extended, "num_replicas_per_host"):
        hosts, per_host = int(extended.num_hosts), int(extended.num_replicas_per_host)
        if hosts * per_host != strategy.num_replicas_in_sync:
            raise StrategyError(
                f"the TPU has {hosts} hosts x {per_host} replicas per host but "
                f"{strategy.num_replicas_in_sync} replicas in sync (model parallelism or an "
                "uneven device assignment), which the per-host records cannot describe.")
        return hosts, per_host
    return worker_info(strategy)[1], local_replicas(strategy)


def local_replicas(strategy: tf.distribute.Strategy) -> int:
    """Replicas driven by this process (devices of this host)."""
    try:
        return len(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy: one replica
        return 1


def check_devices(devices: Sequence[str]) -> None:
    """Raises `StrategyError` when a device of `devices` is not one of this machine's.

    Args:
      devices: device names such as '/GPU:0', '/CPU:1' or '/job:localhost/device:GPU:0'.
    """
    present = {}
    for device in tf.config.list_logical_devices():
        spec = tf.DeviceSpec.from_string(device.name)
        key = (spec.device_type.upper(), spec.device_index)
        present[key] = f"/{spec.device_type}:{spec.device_index}"
    for name in devices:
        try:
            spec = tf.DeviceSpec.from_string(name)
        except ValueError:
            raise StrategyError(f"--devices: {name!r} is not a device name (e.g. /GPU:0, "
                                "/CPU:0).") from None
        if (str(spec.device_type or "").upper(), spec.device_index) not in present:
            raise StrategyError(
                f"device {name} not found; this machine has {', '.join(present.values())} "
                "(--logical_cpus=N splits the CPU into N devices).")
