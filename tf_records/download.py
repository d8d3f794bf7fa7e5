"""Downloading canonical archives: progress bar, integrity check, temporary file then rename.

``fetch(url, dest, ...)`` downloads ``url`` (``http(s)://`` or ``file://``) to ``dest.part``,
shows a progress bar on stderr, checks the expected size / md5 / sha256 when known, and only then
renames it to ``dest`` (``os.replace``). An interrupted or failed download never leaves a file
under ``dest``. Without network it fails at once with a message naming the URL and ``--raw_path``.
"""
import contextlib
import hashlib
import http.client
import os
import urllib.error
import urllib.request

from tf_records.errors import DownloadError
from tf_records.progress import Progress


def fetch(url, dest, md5=None, sha256=None, size=None, progress=True, timeout=15):
    """Downloads ``url`` to ``dest`` atomically and verifies it. Returns ``dest``.

    One attempt, no retries: without network it fails at once (a name that does not resolve, a
    refused connection), and a silent network after ``timeout`` seconds.

    Raises DownloadError (no network, HTTP error, fewer bytes than ``size`` or the server's
    Content-Length, wrong checksum); nothing is left at ``dest`` and the temporary
    ``dest.part`` is removed.
    """
    dest = os.fspath(dest)
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    tmp = dest + ".part"
    hint = f"Download {url} yourself and pass it with --raw_path=FILE."
    try:
        try:
            response = urllib.request.urlopen(url, timeout=timeout)
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
            raise DownloadError(f"cannot download {url}: {getattr(e, 'reason', e)}. {hint}") from None
        with response, open(tmp, "wb") as out:
            total = response.headers.get("Content-Length")
            total = int(total) if total else size
            bar = Progress(f"download {os.path.basename(dest)}", total, enabled=progress)
            h_md5, h_sha = hashlib.md5(), hashlib.sha256()
            got = 0
            while True:
                try:
                    chunk = response.read(1 << 20)
                except (OSError, http.client.HTTPException) as e:
                    raise DownloadError(f"download of {url} interrupted after {got} bytes: {e}. {hint}") from None
                if not chunk:
                    break
                out.write(chunk)
                h_md5.update(chunk)
                h_sha.update(chunk)
                got += len(chunk)
                bar.update(got)
            bar.close()
        for expected in {total, size} - {None}:
            if got != expected:
                raise DownloadError(f"{url}: got {got} bytes, expected {expected} (truncated "
                                    f"download). {hint}")
        if md5 and h_md5.hexdigest() != md5:
            raise DownloadError(f"{url}: md5 {h_md5.hexdigest()} != expected {md5} (corrupted). {hint}")
        if sha256 and h_sha.hexdigest() != sha256:
            raise DownloadError(f"{url}: sha256 {h_sha.hexdigest()} != expected {sha256}. {hint}")
        os.replace(tmp, dest)
        return dest
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
