"""Per-column indexes: inverted (roaring bitmaps), sorted doc ranges, range, bloom filter,
and the partition metadata (the partition functions are in ``engine.spi.partition``)."""
