"""`DataOptions`: where a prepared data directory is and how to make it when it is missing,
and `resolve`: the options completed with what the directory's corpus-info.json records.

Example:

```python
options = resolve(DataOptions(data_dir="data/builtin", dataset=None))  # the recorded dataset
```
"""
import dataclasses
import os
from typing import Optional

from tf_records import corpus_info
from tf_records.errors import DataError
from tf_records.prepare import recorded_corpus
from tf_records.records import store


@dataclasses.dataclass
class DataOptions:
    """Where the data is and how to make it when it is missing.

    Attributes:
      data_dir: Prepared data directory (made on first use: vocabulary, token caches, records).
      dataset: Corpus (builtin, synthetic, text, enwik8, text8, wt103, wt2, ptb, lm1b). A
        prepared data_dir keeps the one its corpus-info.json records unless another is given
        (None: the recorded one).
      raw_path: A corpus archive or text file already on disk (no download).
      download: Download the corpus archive when it is not in data_dir/raw (in a
        multi-worker run, the chief downloads it).
      corpus_options: Corpus options given (the others are the recorded ones).
    """
    data_dir: str = "data/builtin"
    dataset: Optional[str] = "builtin"
    raw_path: Optional[str] = None
    download: bool = True
    corpus_options: dict = dataclasses.field(default_factory=dict)


def resolve(options: DataOptions) -> DataOptions:
    """`options` with the dataset and corpus options data_dir/corpus-info.json records,
    overridden by the given ones; a given dataset other than the recorded one is an error.

    Raises:
      DataError: the dataset differs from the recorded one, or the given options change
        what `data_dir` holds. DataDirError: `data_dir` is a file, or a directory of another
        kind (a model, preset or export directory).
    """
    if os.path.isdir(options.data_dir):  # a file is refused where the directory is made
        store.check_data_dir(options.data_dir)
    info = corpus_info.read_corpus_info(options.data_dir) or {}
    if info.get("dataset") and options.dataset and info["dataset"] != options.dataset:
        raise DataError(f"--data_dir={options.data_dir} holds {info['dataset']!r}, not "
                        f"--dataset={options.dataset!r}; fix one of the two.")
    dataset, corpus_options = recorded_corpus(options.data_dir, options.dataset,
                                              options.raw_path, options.corpus_options)
    return dataclasses.replace(options, dataset=dataset, corpus_options=corpus_options)
