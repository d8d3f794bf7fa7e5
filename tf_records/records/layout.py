"""`RecordLayout`: what a run needs of its records, and the names that carry it.

A layout fixes the segment length Q (`tgt_len`), the streams of each replica (B,
`per_replica_batch`), the replicas of each host, the hosts, the passes over the data and the
fate of a last partial segment. It has `num_streams = num_hosts * replicas_per_host *
per_replica_batch` streams: host `h` owns streams `[h * per_host_batch, (h + 1) *
per_host_batch)`, and local replica `r` of a host owns `per_replica_batch` consecutive ones
of them. Records serve only a run of the same layout, so the layout names their files
(`basename`) and the `runners/prepare_data.py` flags that make them (`flags`). How a token
stream is cut into the streams is `tf_records.records.streams`. `RecordPlan` is what
`tf_records.prepare` writes: a layout per split, and the seed of their rotation offsets.
"""
import dataclasses
from typing import Mapping

from tf_records.errors import LayoutError

LAST_SEGMENT_POLICIES = ("drop", "pad")


@dataclasses.dataclass(frozen=True)
class RecordLayout:
    """Layout of pre-batched records.

    Attributes:
      tgt_len: Segment length Q (tokens per record, the model's segment length).
      per_replica_batch: Streams per replica B (the per-replica batch size).
      replicas_per_host: Local replicas (cores/devices) per host / input pipeline.
      num_hosts: Hosts (input pipelines); one file per host, each host reads only its own.
      num_passes: Copies of the stream, each cyclically rotated by a seeded random offset (the
        reference's num_passes for TPU training; 1 = the stream once, no rotation).
      last_segment: The tail of each stream that does not fill a whole segment: drop (default,
        as the reference's TPU records) drops it; pad keeps it, padding inputs with 0 and
        labels with -1 (consumers must mask labels < 0).

    Example:

    ```python
    layout = RecordLayout(tgt_len=512, per_replica_batch=4, replicas_per_host=8, num_hosts=2)
    layout.num_streams, layout.basename("train")
    # (64, "train.bsz-32.tlen-512.core-8.hosts-2.passes-1")
    ```
    """

    tgt_len: int
    per_replica_batch: int
    replicas_per_host: int = 1
    num_hosts: int = 1
    num_passes: int = 1
    last_segment: str = "drop"

    # The declared range of every number, (low, high, why) (read by the flags,
    # runners/cli/flag_ranges.py): int32 shapes, and a batch of at most 2**20 streams per host.
    RANGES = {
        "tgt_len": (1, 2**31 - 1, "tokens per record"),
        "per_replica_batch": (1, 2**20, "streams"),
        "replicas_per_host": (1, 2**16, "replicas"),
        "num_hosts": (1, 2**16, "hosts"),
        "num_passes": (1, 2**10, "rotated copies of the stream"),
    }

    def __post_init__(self):
        for name, (low, high, why) in self.RANGES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise LayoutError(f"RecordLayout.{name} must be an integer in [{low}, {high}] "
                                  f"({why}), got {value!r}.")
        if self.last_segment not in LAST_SEGMENT_POLICIES:
            raise LayoutError(
                f"RecordLayout.last_segment must be one of {LAST_SEGMENT_POLICIES}, "
                f"got {self.last_segment!r}.")

    @property
    def per_host_batch(self) -> int:
        """Streams per host: `replicas_per_host * per_replica_batch`."""
        return self.replicas_per_host * self.per_replica_batch

    @property
    def num_streams(self) -> int:
        """All streams: `num_hosts * replicas_per_host * per_replica_batch` (the global batch)."""
        return self.num_hosts * self.per_host_batch

    @property
    def num_replicas(self) -> int:
        """Replicas in sync: `num_hosts * replicas_per_host`."""
        return self.num_hosts * self.replicas_per_host

    def basename(self, split: str) -> str:
        """File stem carrying the layout, e.g. `train.bsz-32.tlen-512.core-8.hosts-2.passes-1`.

        `bsz` is the per-host batch (as in the reference's `train.bsz-..tlen-..core-..`).
        `.pad` is appended when `last_segment == "pad"`.
        """
        name = (f"{split}.bsz-{self.per_host_batch}.tlen-{self.tgt_len}.core-{self.replicas_per_host}"
                f".hosts-{self.num_hosts}.passes-{self.num_passes}")
        return name + (".pad" if self.last_segment == "pad" else "")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def flags(self) -> str:
        """The `runners/prepare_data.py` flags that make this layout (for error messages)."""
        text = (f"--tgt_len={self.tgt_len} --per_replica_batch={self.per_replica_batch} "
                f"--replicas_per_host={self.replicas_per_host} --num_hosts={self.num_hosts}")
        if self.num_passes != 1:
            text += f" --num_passes={self.num_passes}"
        if self.last_segment != "drop":
            text += f" --last_segment={self.last_segment}"
        return text


@dataclasses.dataclass(frozen=True)
class RecordPlan:
    """The records `tf_records.prepare` writes.

    Attributes:
      layouts: `{split: RecordLayout}`; the records of each split for its layout.
      seed: seed of the rotation offsets of the layouts with `num_passes > 1` (recorded as
        `pass_seed`).

    Example:

    ```python
    RecordPlan({"train": RecordLayout(512, 22), "valid": RecordLayout(512, 10)})
    ```
    """
    layouts: Mapping[str, RecordLayout] = dataclasses.field(default_factory=dict)
    seed: int = 0
