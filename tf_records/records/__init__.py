"""The TFRecords of a split for a `RecordLayout`: the layout, the cut of the token stream into
its streams, the serialized examples, writing, reading, their metadata, the token caches they
are made from, and finding or making them (`store`)."""
