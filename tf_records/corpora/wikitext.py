"""WikiText-103 and WikiText-2 (Merity et al.), word level.

Reference rule: every line (blank lines too) ends with `<eos>`; no lower-casing; split on
whitespace; the vocabulary is counted on the training split only (`<eos>` is id 0, then by
count). WikiText already replaces rare words by `<unk>` (a normal word here), so valid/test
contain no unknown words. WT103 has 267,735 symbols and the reference cutoffs [20000, 40000,
200000]; WT2 uses no cutoffs. Integrity: the zip's CRCs and the three expected members (no
archive checksum is pinned because none is published).
"""
from tf_records.corpora.base import Corpus, zip_member_lines
from tf_records.corpora.common import word_corpus
from tf_records.corpora.options import BACKEND_HELP, BACKENDS, URL_HELP, CorpusOptions, Option
from tf_records.text.tokenize import TextRules
from tf_records.vocab.choice import VocabCounting

URL_WT103 = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip"
URL_WT2 = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip"
MEMBERS = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens", "test": "wiki.test.tokens"}


class _WikiText(Corpus):
    level = "word"
    OPTIONS = CorpusOptions(backend=Option("tf_text", BACKEND_HELP, choices=BACKENDS))

    def build(self, data_dir, raw_path=None, download=True, progress=True):
        path = self.obtain_archive(data_dir, raw_path, download, progress)
        sources = {s: (lambda m=m: zip_member_lines(path, m)) for s, m in MEMBERS.items()}
        return word_corpus(sources, TextRules("word", eos="<eos>"),
                           VocabCounting(count_splits=["train"], specials=["<eos>"]),
                           backend=self.options["backend"],
                           info={"source": self.options.get("url")}, progress=progress)


class WikiText103(_WikiText):
    name = "wt103"
    cutoffs = (20000, 40000, 200000)
    archive_name = "wikitext-103-v1.zip"
    OPTIONS = _WikiText.OPTIONS.extended(url=Option(URL_WT103, URL_HELP))
    ARCHIVE_CHECKS = {"md5": "9ddaacaf6af0710eda8c456decff7832"}  # torchtext's WikiText103


class WikiText2(_WikiText):
    name = "wt2"
    cutoffs = ()
    archive_name = "wikitext-2-v1.zip"
    OPTIONS = _WikiText.OPTIONS.extended(url=Option(URL_WT2, URL_HELP))
    ARCHIVE_CHECKS = {"md5": "542ccefacc6c27f945fb54453812b3cd"}  # torchtext's WikiText2
