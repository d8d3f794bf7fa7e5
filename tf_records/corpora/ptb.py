"""Penn Treebank (Mikolov's `simple-examples`), word level.

Reference rule: lower-cased, `<eos>` at every line end, vocabulary counted on train + valid +
test (`<eos>` first, then by count); PTB already contains `<unk>`. No cutoffs. Integrity: the
tar.gz must read completely and hold `data/ptb.{train,valid,test}.txt`.
"""
import io
import tarfile
import zlib

from tf_records.corpora.base import Corpus, check_nonempty, decoded_lines
from tf_records.corpora.common import word_corpus
from tf_records.corpora.options import BACKEND_HELP, BACKENDS, URL_HELP, CorpusOptions, Option
from tf_records.errors import CorpusError
from tf_records.text.tokenize import TextRules
from tf_records.vocab.choice import VocabCounting

URL = "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"
MEMBERS = {"train": "data/ptb.train.txt", "valid": "data/ptb.valid.txt", "test": "data/ptb.test.txt"}


def read_tar_members(path, suffixes) -> dict:
    """Reads the members ending with each suffix from a tar(.gz): suffix -> bytes."""
    check_nonempty(path)
    found = {}
    try:
        with tarfile.open(path, "r:*") as tf:
            for member in tf:
                for suffix in suffixes:
                    if member.isfile() and (member.name == suffix or member.name.endswith("/" + suffix)):
                        found[suffix] = tf.extractfile(member).read()
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        raise CorpusError(f"{path} is not a readable tar archive ({e}): truncated or corrupted "
                          "download? Delete it and download it again.") from None
    missing = [s for s in suffixes if s not in found]
    if missing:
        raise CorpusError(f"archive {path} has no member(s) {missing}; is it the right archive?")
    return found


class PennTreebank(Corpus):
    name = "ptb"
    level = "word"
    cutoffs = ()
    archive_name = "simple-examples.tgz"
    OPTIONS = CorpusOptions(backend=Option("tf_text", BACKEND_HELP, choices=BACKENDS),
                            url=Option(URL, URL_HELP))

    def build(self, data_dir, raw_path=None, download=True, progress=True):
        path = self.obtain_archive(data_dir, raw_path, download, progress)
        data = read_tar_members(path, list(MEMBERS.values()))

        def lines(member):
            return decoded_lines(io.TextIOWrapper(io.BytesIO(data[member]), encoding="utf-8"),
                                 f"{path}:{member}")

        sources = {s: (lambda m=m: lines(m)) for s, m in MEMBERS.items()}
        return word_corpus(sources, TextRules("word", lower_case=True, eos="<eos>"),
                           VocabCounting(count_splits=["train", "valid", "test"],
                                         specials=["<eos>"]),
                           backend=self.options["backend"], info={"source": URL}, progress=progress)
