"""The report's folder: report.json (every figure), report.md (one table and what was skipped)
and profiles.tar.gz (the profiles' `*.xplane.pb` traces, all TensorBoard's profile plugin
needs), within the limits a result must fit to come back from a device machine.

The two reports are rewritten (atomically) after every part, so a run stopped from outside
still leaves the parts it finished.
"""
import glob
import os
import shutil
import tarfile

from txl_tf.storage.atomic_writes import write_json_atomic, write_text_atomic

REPORT_JSON, REPORT_MD, PROFILES = "report.json", "report.md", "profiles.tar.gz"
OWN_FILES = (REPORT_JSON, REPORT_MD, PROFILES)
MAX_FILES = 8
MAX_FILE_BYTES = 16 * 2**20
MAX_DEPTH = 2  # folders below --out_dir


class OutDirError(ValueError):
    """--out_dir cannot take the report."""


def check_out_dir(out_dir):
    """Raises `OutDirError` (one line: the problem and the fix) when `out_dir` is a file or
    holds anything but an earlier report's files (the report must be all the folder holds)."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise OutDirError(f"--out_dir={out_dir} is a file; give a new or empty folder.")
    if os.path.isdir(out_dir):
        others = sorted(set(os.listdir(out_dir)) - set(OWN_FILES))
        if others:
            shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
            raise OutDirError(f"--out_dir={out_dir} holds other files ({shown}); give a new or "
                              "empty folder (the report must be all it holds).")


def _tar(path, groups):
    with tarfile.open(path, "w:gz") as tar:
        for name, (logdir, files) in groups.items():
            for f in files:
                tar.add(f, arcname=os.path.join(name, os.path.relpath(f, logdir)))
    return os.path.getsize(path)


def pack_profiles(logdirs, out_dir, work_dir):
    """Packs the `plugins/profile/*/*.xplane.pb` of each {name: logdir} into profiles.tar.gz as
    <name>/plugins/profile/<run>/<host>.xplane.pb (open with `tensorboard --logdir=<name>`
    after extracting). While the archive is over the file limit, the largest trace is left out.

    Returns:
      {"file": "profiles.tar.gz" or None, "bytes", "traces": [names], "left_out": [reasons]}.
    """
    groups, left_out = {}, []
    for name, logdir in logdirs.items():
        files = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")))
        if files:
            groups[name] = (logdir, files)
        else:
            left_out.append(f"{name}: no trace was written")
    partial = os.path.join(work_dir, PROFILES)
    while groups:
        size = _tar(partial, groups)
        if size <= MAX_FILE_BYTES:
            staged = os.path.join(out_dir, f".{PROFILES}.partial")
            shutil.copyfile(partial, staged)  # into out_dir's filesystem, then one rename
            os.replace(staged, os.path.join(out_dir, PROFILES))
            return {"file": PROFILES, "bytes": size, "traces": sorted(groups),
                    "left_out": left_out}
        largest = max(groups, key=lambda n: sum(os.path.getsize(f) for f in groups[n][1]))
        left_out.append(f"{largest}: its trace took {PROFILES} to {size / 2**20:.1f} MiB, past "
                        f"{MAX_FILE_BYTES // 2**20} MiB")
        del groups[largest]
    return {"file": None, "bytes": 0, "traces": [], "left_out": left_out}


def limits(out_dir):
    """{"files", "largest_bytes", "depth", "fits"} of the folder against the limits."""
    files, depth = [], 0
    for root, _, names in os.walk(out_dir):
        level = os.path.relpath(root, out_dir).count(os.sep) + (root != out_dir)
        depth = max(depth, level)
        files += [os.path.join(root, n) for n in names]
    largest = max((os.path.getsize(f) for f in files), default=0)
    return {"files": len(files), "largest_bytes": largest, "depth": depth,
            "max_files": MAX_FILES, "max_file_bytes": MAX_FILE_BYTES, "max_depth": MAX_DEPTH,
            "fits": len(files) <= MAX_FILES and largest <= MAX_FILE_BYTES and depth <= MAX_DEPTH}


def _fmt(value, spec, scale=1.0):
    return "-" if value is None else format(value / scale, spec)


def markdown(record):
    """report.md: the device, the rates, one table of the runs, the peer, what was skipped."""
    m = record["machine"]
    lines = ["# txl-tf accelerator report", "",
             f"Device: {m['device']} ({m['kind']}); TensorFlow {m['tensorflow']}, "
             f"{'smoke shapes' if record['smoke'] else 'the recipes as written'}; budget "
             f"{record['budget']['budget_seconds']:.0f} s, used "
             f"{record['budget']['elapsed_seconds']:.0f} s. Command: `{record['command']}`", ""]
    rates = record.get("rates") or {}
    for precision, rate in (rates.get("tensorflow") or {}).items():
        torch_rate = (rates.get("torch") or {}).get(precision)
        lines.append(f"- matmul rate {precision}: TensorFlow "
                     f"{rate['flops_per_second'] / 1e12:.3g} TFLOP/s ({rate['dtype']}, side "
                     f"{rate['size']})" + (f"; PyTorch {torch_rate['flops_per_second'] / 1e12:.3g}"
                                           " TFLOP/s" if torch_rate else ""))
    lines += ["", "| run | compile s | s/step | tokens/s | MFU | peak device GiB | chooser "
              "estimate GiB | chunks x streams | FLOP estimate s/step | measured / estimate | "
              "first / last loss |", "| " + " | ".join(["---"] * 11) + " |"]
    for run in record.get("runs", []):
        losses = run.get("losses") or []
        lines.append("| " + " | ".join([
            run["name"], _fmt(run.get("compile_s"), ".1f"), _fmt(run.get("step_s"), ".4g"),
            _fmt(run.get("tokens_per_s"), ",.0f"),
            _fmt(None if run.get("mfu") is None else 100 * run["mfu"], ".1f") + "%",
            _fmt(run.get("peak_device_memory_bytes"), ".3g", 2**30),
            _fmt(run.get("chooser_estimate_bytes"), ".3g", 2**30),
            f"{run.get('grad_accum_steps')} x {run.get('streams_per_chunk')}",
            _fmt(run.get("estimated_step_s"), ".3g"), _fmt(run.get("measured_over_estimate"),
                                                            ".3g"),
            f"{losses[0]:.4f} / {losses[-1]:.4f}" if losses else "-"]) + " |")
    reasons = {run.get("peak_device_memory_reason") for run in record.get("runs", [])
               if run.get("peak_device_memory_bytes") is None} - {None}
    lines += [f"\nNo peak device memory: {reason}." for reason in sorted(reasons)]
    replicas = record.get("replicas")
    if replicas and replicas.get("max_abs_loss_difference") is not None:
        lines += ["", f"One against two replicas ({replicas['devices']}): "
                  f"{replicas['steps_compared']} steps, largest loss difference "
                  f"{replicas['max_abs_loss_difference']:.3g}."]
    for precision, peer in (record.get("peer") or {}).items():
        hf = peer["huggingface"]
        lines.append(f"- against Hugging Face ({hf['precision']}, {hf['device']}), {precision}: "
                     f"train {peer['train_speedup_vs_huggingface']:.2f}x "
                     f"({peer['train_tokens_per_s']:,.0f} vs {hf['train_tokens_per_s']:,.0f} "
                     f"tokens/s), eval {peer['eval_speedup_vs_huggingface']:.2f}x")
    profiles = record.get("profiles") or {}
    if profiles.get("file"):
        lines += ["", f"Profiles: `{profiles['file']}` ({', '.join(profiles['traces'])}); "
                  "extract it and run `tensorboard --logdir=<name>` (Profile tab)."]
    skipped = record["budget"]["skipped"]
    lines += ["", "Skipped:" if skipped else "Skipped: nothing."]
    lines += [f"- {s['part']}: {s['item']}: {s['reason']}" for s in skipped]
    return "\n".join(lines) + "\n"


def write(record, out_dir):
    """Writes report.json and report.md (atomically)."""
    write_json_atomic(os.path.join(out_dir, REPORT_JSON), record)
    write_text_atomic(os.path.join(out_dir, REPORT_MD), markdown(record))
