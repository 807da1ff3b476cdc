"""Per-column indexes: inverted (roaring bitmaps), sorted doc ranges, range, bloom filter,
and the partition functions whose results go in the column metadata."""
