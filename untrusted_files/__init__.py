"""Files and directories that came from elsewhere: the one way to read them.

A model, data, preset or export directory, a flag file or a checkpoint's state may have been
made by someone else. Everything read from one goes through this package:

- `reading`: a regular file inside its directory only (a link that leads outside, a named
  pipe, a device or a directory is refused), bounded by its kind's size (checked with `fstat`
  on the opened descriptor before any byte is read), UTF-8 text, JSON of bounded nesting;
  copies of such files go through the same checks (`copy_file`);
- `schema`: a JSON value checked against a declared shape (types, ranges, lengths);
- `dir_kinds`: what kind of directory a path is (data, model, preset, export), recognised by
  its marker files, and the refusal of a command that would write into another kind.

Imports nothing but the standard library: `txl_tf` and `tf_records` both build on it
(CONTRIBUTING.md, "Dependency directions").
"""
from untrusted_files.errors import UntrustedFileError

__all__ = ["UntrustedFileError"]
