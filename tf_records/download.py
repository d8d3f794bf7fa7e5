"""Downloading canonical archives: progress bar, integrity check, temporary file then rename.

`fetch(url, dest, ...)` downloads `url` (`http(s)://` or `file://`) to a temporary file beside
`dest`, shows a progress bar on stderr, checks the expected size / md5 / sha256 when known, and
only then renames it to `dest`. An interrupted or failed download never leaves a file under
`dest`. Without network it fails at once with a message naming the URL and `--raw_path`.
"""
import hashlib
import http.client
import os
import urllib.error
import urllib.request

from tf_records import atomic
from tf_records.errors import DownloadError
from tf_records.progress import Progress


def _open(url, timeout, hint):
    try:
        return urllib.request.urlopen(url, timeout=timeout)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
        raise DownloadError(f"cannot download {url}: {getattr(e, 'reason', e)}. {hint}") from None


def _copy(response, out, bar, url, hint):
    """Copies `response` into the file `out`; returns `(bytes, md5, sha256)`."""
    h_md5, h_sha = hashlib.md5(), hashlib.sha256()
    got = 0
    while True:
        try:
            chunk = response.read(1 << 20)
        except (OSError, http.client.HTTPException) as e:
            raise DownloadError(f"download of {url} interrupted after {got} bytes: {e}. "
                                f"{hint}") from None
        if not chunk:
            return got, h_md5.hexdigest(), h_sha.hexdigest()
        out.write(chunk)
        h_md5.update(chunk)
        h_sha.update(chunk)
        got += len(chunk)
        bar.update(got)


def _check(url, got, sizes, md5, sha256, expected_md5, expected_sha256, hint):
    for expected in sizes - {None}:
        if got != expected:
            raise DownloadError(f"{url}: got {got} bytes, expected {expected} (truncated "
                                f"download). {hint}")
    if expected_md5 and md5 != expected_md5:
        raise DownloadError(f"{url}: md5 {md5} != expected {expected_md5} (corrupted). {hint}")
    if expected_sha256 and sha256 != expected_sha256:
        raise DownloadError(f"{url}: sha256 {sha256} != expected {expected_sha256}. {hint}")


def fetch(url, dest, md5=None, sha256=None, size=None, progress=True, timeout=15):
    """Downloads `url` to `dest` atomically and verifies it.

    One attempt, no retries: without network it fails at once (a name that does not resolve,
    a refused connection), and a silent network after `timeout` seconds.

    Args:
      url: an `http(s)://` or `file://` URL.
      dest: the file to write (its directory is created).
      md5, sha256: expected checksums (None: not checked).
      size: expected size in bytes (None: the server's Content-Length, when it sends one).
      progress: show a progress bar on stderr.
      timeout: seconds without data before giving up.

    Returns:
      `dest`.

    Raises:
      DownloadError: no network, HTTP error, fewer bytes than `size` or the server's
        Content-Length, or a wrong checksum; nothing is left at `dest` and the temporary
        file is removed.
    """
    dest = os.fspath(dest)
    hint = f"Download {url} yourself and pass it with --raw_path=FILE."
    with atomic.atomic_path(dest) as tmp:
        response = _open(url, timeout, hint)
        with response, open(tmp, "wb") as out:
            total = response.headers.get("Content-Length")
            total = int(total) if total else size
            bar = Progress(f"download {os.path.basename(dest)}", total, enabled=progress)
            got, got_md5, got_sha256 = _copy(response, out, bar, url, hint)
            bar.close()
        _check(url, got, {total, size}, got_md5, got_sha256, md5, sha256, hint)
    return dest
