"""`TrainOptions`: everything of a training run except the model configuration and the data.

The defaults here are the ones of `runners/train.py` (its flags are generated from this class,
their help from the `Attributes:` section below); the data options live with the data
(`tf_records.DataOptions`).
"""
import dataclasses
from typing import Optional

from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import Range, check_fields
from txl_tf.devices.choices import JIT_COMPILE, STRATEGIES, JitCompile  # noqa: F401  (flags)
from txl_tf.training.errors import TrainError  # noqa: F401  (raised here and by the run's parts)

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")

# The peak learning rate of a level when --learning_rate is not given: a word-level model of a
# small text stays at its unigram baseline at 2e-3 (docs/training.md).
LEARNING_RATES = {"word": 1e-3}
DEFAULT_LEARNING_RATE = 2e-3


@dataclasses.dataclass
class TrainOptions:
    """Options of one training run (`txl_tf.commands.train.train`).

    Attributes:
      model_dir: Checkpoints, config, TensorBoard logs.
      per_host_train_bsz: Training streams per host (worker).
      train_batch_size: Global training batch (0: per_host_train_bsz x hosts).
      per_host_valid_bsz: Validation streams per host (0: as training).
      num_passes: Training records hold this many rotated copies of the stream (the reference
        TPU recipes use 10).
      learning_rate: Peak learning rate (default: chosen for the data's level, 1e-3 for word
        level and 2e-3 for byte and char level).
      warmup_steps: Linear warmup steps.
      train_steps: Total training steps.
      min_lr_ratio: Final LR / peak LR of the cosine decay.
      clip: Global-norm clip of the all-reduced gradient (<= 0: none).
      grad_accum_steps: Accumulate the gradients of this many chunks of each replica's streams
        before one update (same result, less memory).
      max_per_replica_batch: Most streams a replica computes at once; a larger per-replica
        batch raises --grad_accum_steps (same update). 0: estimated from the device memory (CPU
        RAM, GPU memory).
      precision: Keras dtype policy; mixed_float16 adds dynamic loss scaling.
      steps_per_loop: Training steps per compiled loop.
      log_steps: Console line and training scalars every this many steps.
      log_seconds: A console line at least every this many seconds, whatever --log_steps (the
        loss where a compiled loop ends, else where the running loop is; 0: none).
      save_steps: Checkpoint every this many steps (and at the end).
      eval_steps: Validate every this many steps (0: only at the end).
      max_eval_batches: Validation steps per evaluation (-1: whole split).
      keep_checkpoints: Training checkpoints kept (the best on validation is kept apart in
        model_dir/best).
      init_checkpoint: Warm start: model weights from this model directory or checkpoint
        (ignored when model_dir already has a checkpoint).
      lora_rank: LoRA fine-tuning: freeze the model and train adapters of this rank on the
        attention's qkv and o projections (0: train every weight). With --init_checkpoint of
        the first model; model_dir/lora.json records the adapters for every reader.
      strategy: Distribution strategy. auto (the recipes): a TPU if --tpu is given or one is
        attached, else all local GPUs, else the CPU.
      tpu: --strategy=tpu: 'local' (this TPU VM's own chips), a TPU or pod slice name, or
        grpc://address.
      tpu_timeout: Seconds to wait for the TPU of --tpu (a name or grpc:// address) to answer
        before giving up with an error.
      devices: Devices for one_device/mirrored, e.g. /CPU:0,/CPU:1.
      seed: Seed of the initialisation and dropout.
      checkpoint_memory: Save each worker's memory with the checkpoints so that a resumed run
        continues exactly; off: a resumed run restarts the memory from zeros (saves disk for
        big models).
      flags_text: The run's flags as text, stored as model_dir/flags.txt (empty: no file).
      target_hardware: What a recipe was sized for (e.g. 'a TPU with 32 cores'); the duration
        estimate names it when the run would take more than a day on this machine.
      half_loss: The paper's half loss (section 4.2, Table 6): only the last Q - Q//2 positions
        of every training segment count in the loss (the memory still carries the whole
        segment); validation still scores every token.
      jit_compile: XLA compiles the training step: auto (on, except CPU mixed_bfloat16; a TPU
        always compiles), true or false. One line of the run says what was
        chosen and why (txl_tf/devices/step_compilation.py).
      profile_steps: START,END: a TensorBoard profile of training steps START to END (counted
        from 1, both included) in model_dir/plugins/profile/ (TensorBoard's Profile tab);
        empty: none.
    """
    model_dir: str = "runs/default"
    per_host_train_bsz: int = 16
    train_batch_size: int = 0
    per_host_valid_bsz: int = 0
    num_passes: int = 1
    learning_rate: Optional[float] = None
    warmup_steps: int = 50
    train_steps: int = 600
    min_lr_ratio: float = 0.004
    clip: float = 0.25
    grad_accum_steps: int = 1
    max_per_replica_batch: int = 0
    precision: str = "float32"
    steps_per_loop: int = 50
    log_steps: int = 50
    log_seconds: int = 60
    save_steps: int = 200
    eval_steps: int = 200
    max_eval_batches: int = 100
    keep_checkpoints: int = 5
    init_checkpoint: Optional[str] = None
    lora_rank: int = 0
    strategy: str = "default"
    tpu: Optional[str] = None
    tpu_timeout: int = 300
    devices: tuple = ()
    seed: int = 0
    checkpoint_memory: bool = True
    flags_text: str = ""
    target_hardware: str = ""
    half_loss: bool = False
    jit_compile: str = "auto"
    profile_steps: tuple = ()

    # The declared range of every number (txl_tf/runtime/ranges.py): the flags' check and help,
    # and `checked`.
    RANGES = {
        "per_host_train_bsz": Range(1, 2**20, "streams"),
        "train_batch_size": Range(0, 2**26, "0: per_host_train_bsz x hosts"),
        "per_host_valid_bsz": Range(0, 2**20, "0: as training"),
        "num_passes": Range(1, INT32_MAX, "copies of the stream"),
        "learning_rate": Range(0.0, None, "a step size", open_low=True, integer=False),
        "warmup_steps": Range(0, INT32_MAX, "steps"),
        "train_steps": Range(1, INT32_MAX, "steps"),
        "min_lr_ratio": Range(0.0, 1.0, "a fraction of the peak", integer=False),
        "clip": Range(None, None, "<= 0: none", integer=False),
        "grad_accum_steps": Range(1, INT32_MAX, "chunks"),
        "max_per_replica_batch": Range(0, INT32_MAX, "0: estimated"),
        "steps_per_loop": Range(1, INT32_MAX, "steps"),
        "log_steps": Range(1, INT32_MAX, "steps"),
        "log_seconds": Range(0, INT32_MAX, "0: none"),
        "save_steps": Range(0, INT32_MAX, "steps"),
        "eval_steps": Range(0, INT32_MAX, "0: only at the end"),
        "max_eval_batches": Range(0, INT32_MAX, "-1: whole split", also=(-1,)),
        "keep_checkpoints": Range(1, INT32_MAX, "checkpoints"),
        "tpu_timeout": Range(0, INT32_MAX, "seconds"),
        "profile_steps": Range(1, INT32_MAX, "START,END step numbers"),
        "lora_rank": Range(0, 2**16, "0: no LoRA; the rank of the attention's adapters"),
        "seed": Range(0, 2**32 - 1, "NumPy's seed range: Keras seeds NumPy, Python and "
                                    "TensorFlow with it"),
    }


def profile_range(profile_steps, train_steps: int) -> Optional[tuple]:
    """(START, END) of `--profile_steps` (strings or ints), or None when empty.

    Raises:
      TrainError: not two integers 1 <= START <= END <= train_steps.
    """
    if not profile_steps:
        return None
    given = ",".join(map(str, profile_steps))
    usage = (f"--profile_steps={given} is not START,END with 1 <= START <= END <= "
             f"--train_steps={train_steps}; give two step numbers, e.g. --profile_steps=2,3.")
    try:
        start, end = (int(str(v).strip()) for v in profile_steps)
    except ValueError:
        raise TrainError(usage) from None
    if not 1 <= start <= end <= train_steps:
        raise TrainError(usage)
    return start, end


def for_level(options: TrainOptions, level: Optional[str]) -> TrainOptions:
    """`options` with the defaults that depend on the data resolved: `learning_rate` None
    becomes the one of `level` (`LEARNING_RATES`, else `DEFAULT_LEARNING_RATE`)."""
    if options.learning_rate is not None:
        return options
    return dataclasses.replace(options, learning_rate=LEARNING_RATES.get(
        level, DEFAULT_LEARNING_RATE))


def checked(options: TrainOptions) -> TrainOptions:
    """`options` after the checks that need no data or device; a warmup longer than the run
    is shortened to the run (one line says so).

    Raises:
      TrainError: a number outside its declared range (`TrainOptions.RANGES`), or an
        unknown precision.
    """
    o = options
    check_fields(o, TrainError, prefix="--")
    if o.precision not in PRECISIONS:
        raise TrainError(f"--precision must be one of {PRECISIONS}, got {o.precision!r}.")
    try:
        JitCompile.parse(o.jit_compile)
    except ValueError as error:
        raise TrainError(str(error)) from None
    profile = profile_range(o.profile_steps, o.train_steps)
    o = dataclasses.replace(o, profile_steps=profile or ())
    if o.warmup_steps > o.train_steps >= 1:  # a short run of a recipe: warm up all the way
        print(f"note: --warmup_steps={o.warmup_steps} is longer than --train_steps="
              f"{o.train_steps}: the learning rate warms up over all {o.train_steps} steps.",
              flush=True)
        o = dataclasses.replace(o, warmup_steps=o.train_steps)
    return o
