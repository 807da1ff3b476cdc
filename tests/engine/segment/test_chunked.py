import numpy as np
import pytest

from engine.common.errors import SegmentError
from engine.segment.chunked import CHUNK_ROWS, ChunkedArray, compress_chunks, write_chunks
from engine.segment.files import BufferReader, BufferWriter


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.uint16, np.uint32, np.int64, np.float64, np.float32]
)
def test_round_trip_and_ranges(tmp_path, dtype):
    rng = np.random.default_rng(3)
    values = (rng.integers(0, 200, CHUNK_ROWS * 2 + 123)).astype(dtype)
    writer = BufferWriter(tmp_path)
    size = write_chunks(writer, "x", *compress_chunks(values))
    writer.close()
    store = BufferReader(tmp_path)
    assert size == len(store.bytes("x"))
    chunked = ChunkedArray(store.bytes("x"), "x")
    assert (chunked.num_chunks, len(chunked)) == (3, len(values))
    assert np.array_equal(chunked.read(), values)
    for start, end in (
        (0, 10),
        (CHUNK_ROWS - 5, CHUNK_ROWS + 5),
        (CHUNK_ROWS * 2, len(values)),
        (7, 7),
        (-3, 2),
    ):
        assert np.array_equal(chunked.read_range(start, end), values[max(start, 0) : end])


def test_corrupt_chunk_raises(tmp_path):
    writer = BufferWriter(tmp_path)
    write_chunks(writer, "x", *compress_chunks(np.arange(1000, dtype=np.int64)))
    writer.close()
    data = bytearray((tmp_path / "columns.psf").read_bytes())
    data[-10:] = b"\0" * 10
    (tmp_path / "columns.psf").write_bytes(bytes(data))
    with pytest.raises(SegmentError, match="corrupt"):
        ChunkedArray(BufferReader(tmp_path).bytes("x"), "x").read()
