"""text8: the first 10^8 characters of cleaned Wikipedia text (a-z and space), char level.

Reference (`prep_text8.py`): the last 10M characters are split into valid (5M) and test (5M).
The vocabulary has 27 symbols. The reference wrote spaces as `_`; here a space stays a space
(written `\\u0020` in `vocab.txt`). Integrity: the member `text8` must have 100,000,000
characters (no checksum is pinned because none is published with the file).
"""
from tf_records.corpora.base import Corpus, contiguous_split, read_zip_member
from tf_records.corpora.common import char_corpus
from tf_records.corpora.options import URL_HELP, VERIFY_CHECKSUM_HELP, CorpusOptions, Option
from tf_records.errors import CorpusError

URL = "https://mattmahoney.net/dc/text8.zip"
MEMBER_SIZE = 100_000_000


class Text8(Corpus):
    name = "text8"
    level = "char"
    cutoffs = ()
    archive_name = "text8.zip"
    OPTIONS = CorpusOptions(
        eval_chars=Option(5_000_000, "characters in valid and in test (5,000,000).",
                          range=(1, 50_000_000, "text8 holds 100,000,000 characters")),
        verify_checksum=Option(True, VERIFY_CHECKSUM_HELP),
        url=Option(URL, URL_HELP))

    def build(self, data_dir, raw_path=None, download=True, progress=True):
        path = self.obtain_archive(data_dir, raw_path, download, progress)
        data = read_zip_member(path, "text8")
        if self.options["verify_checksum"] and len(data) != MEMBER_SIZE:
            raise CorpusError(f"{path}: member text8 has {len(data)} bytes, the canonical file has "
                              f"{MEMBER_SIZE}. Download {URL} again, or pass --noverify_checksum.")
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError as e:
            raise CorpusError(f"{path}: text8 must be ASCII; byte {e.start} is not.") from None
        n = int(self.options["eval_chars"])
        texts = contiguous_split(text, n, n, f"{path}:text8")
        return char_corpus(texts, info={"source": URL})
