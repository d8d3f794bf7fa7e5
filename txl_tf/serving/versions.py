"""The numbered versions of an export directory: reserved atomically, swapped in whole, and
recovered after a kill.

EXPORT_DIR holds one directory per version (`1/`, `2/`, ...), which TF Serving watches. An
export of version V writes `.V.tmp-PID` and renames it to `V`; with --overwrite the old `V` is
first renamed to `.V.old-PID` and deleted after the swap
(`txl_tf.storage.atomic_writes.swap_names`).

- Two exports at once get distinct versions: the version is chosen and its temporary directory
  made (`os.mkdir`, the reservation) while holding an exclusive `flock` of EXPORT_DIR itself
  (no lock file), and a running export's `.V.tmp-PID` counts as taken.
- An export killed between its two renames left no `V` and the complete old version as
  `.V.old-PID`: the next export renames it back (`recover_versions`) and deletes the
  temporaries of killed exports, whole or not; those of running exports are left alone.

Example:
  >>> with reserved_version("/models/txl", None) as (version, tmp):
  ...     write(tmp)
  ...     swap_in(tmp, "/models/txl", version, overwrite=False)
"""
import contextlib
import errno
import os
import re
import shutil
from typing import Optional

from txl_tf.storage.atomic_writes import (recover_directory, running_elsewhere, swap_directory,
                                          swap_names)
from txl_tf.runtime.error_text import is_disk_full
from txl_tf.storage.dir_lock import directory_locked
from txl_tf.serving.export_options import ExportInputError, ExportRuntimeError

# leftovers of `swap_names` for a version: .V.tmp-PID and .V.old-PID
_SWAP = re.compile(r"\.(\d+)\.(?:tmp|old)-\d+")
# leftovers of exports written before the swap names: .tmp-V-PID and .tmp-V-PID-replaced
_LEGACY = re.compile(r"\.tmp-(\d+)-(\d+)(-replaced)?")


def _recover_legacy(export_dir: str, name: str, match) -> None:
    """A `.tmp-V-PID[-replaced]` of a killed export: the replaced old version is restored when
    V is missing, anything else deleted."""
    if running_elsewhere(int(match.group(2))):
        return
    path, final = os.path.join(export_dir, name), os.path.join(export_dir, match.group(1))
    if match.group(3) and not os.path.lexists(final):
        os.replace(path, final)
    else:
        shutil.rmtree(path, ignore_errors=True)


def recover_versions(export_dir: str) -> None:
    """Undo what killed exports left in `export_dir`: a version whose replacement was killed
    between its renames is restored (the complete old one), every other temporary of a killed
    export deleted. Call it holding the directory's lock (`reserved_version` does)."""
    names = os.listdir(export_dir)
    for version in sorted({m.group(1) for m in map(_SWAP.fullmatch, names) if m}):
        recover_directory(os.path.join(export_dir, version))
    for name in names:
        match = _LEGACY.fullmatch(name)
        if match:
            _recover_legacy(export_dir, name, match)


def next_version(export_dir: str) -> int:
    """One more than the highest version present or being written (a reservation)."""
    if not os.path.isdir(export_dir):
        return 1
    names = os.listdir(export_dir)
    taken = [int(n) for n in names if re.fullmatch(r"\d+", n)]
    taken += [int(m.group(1)) for m in map(_SWAP.fullmatch, names) if m]
    return max(taken, default=0) + 1


@contextlib.contextmanager
def reserved_version(export_dir: str, version: Optional[int]):
    """Reserves a version of `export_dir` and yields (version, its empty temporary directory);
    the temporary directory is deleted when the block ends (swapped in or failed).

    Args:
      export_dir: the directory of the versions (created when missing).
      version: the version to write, or None for the next free one.

    Raises:
      ExportRuntimeError: the directory cannot be created, listed or locked.
    """
    try:
        os.makedirs(export_dir, exist_ok=True)
        with directory_locked(export_dir):
            recover_versions(export_dir)
            version = next_version(export_dir) if version is None else int(version)
            tmp = os.path.join(export_dir, swap_names(os.path.join(export_dir, str(version)))[0])
            os.mkdir(tmp)  # the reservation; the umask applies, as to every exported file
    except OSError as error:
        if is_disk_full(error):
            raise ExportRuntimeError(f"no space left on {export_dir}: free some space and "
                                     "export again.") from None
        raise ExportRuntimeError(f"--export_dir {export_dir}: {error.strerror or error}; give a "
                                 "directory you can write to.") from None
    try:
        yield version, tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def swap_in(tmp: str, export_dir: str, version: int, overwrite: bool) -> str:
    """Renames the written `tmp` to EXPORT_DIR/VERSION under the directory's lock, with the one
    directory swap of the package (`swap_directory`: the old version, with `overwrite`, renamed
    aside first and deleted after); returns the final path.

    Raises:
      ExportInputError: the version exists (written meanwhile by another export) and
        `overwrite` is off.
    """
    final = os.path.join(export_dir, str(version))
    old = os.path.join(export_dir, swap_names(final)[1])
    with directory_locked(export_dir):
        if os.path.lexists(final) and not overwrite:
            raise ExportInputError(f"{final} was written by another export meanwhile; pass "
                                   "--overwrite or another --version.")
        try:
            swap_directory(tmp, final, old)
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise ExportInputError(f"{final} exists; pass --overwrite or another "
                                       "--version.") from None
            raise
    shutil.rmtree(old, ignore_errors=True)
    return final
