"""tf_records: corpora, vocabularies and TFRecord pipelines for txl-tf."""
