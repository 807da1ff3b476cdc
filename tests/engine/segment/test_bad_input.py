"""Uncoercible rows, failed builds, corrupt archives: clear errors and nothing left behind."""

import gzip
import io
import tarfile

import pyarrow as pa
import pytest

from engine.common.errors import IngestError, SegmentError
from engine.segment import build_segment, load_segment, pack_segment, unpack_segment
from engine.segment.tarball import SegmentTooLargeError
from tests.engine.conftest import make_schema, make_table_config

SCHEMA = make_schema(
    dimensions=[{"name": "city", "dataType": "STRING"}, {"name": "n", "dataType": "INT"}],
    metrics=[{"name": "amount", "dataType": "DOUBLE"}],
)


def batches():
    yield pa.record_batch(
        {"city": ["a", "b", "c"], "n": ["1", "2", "x3"], "amount": ["1.5", "2", "3"]}
    )
    yield pa.record_batch({"city": ["d", "e"], "n": ["4", "5"], "amount": ["4", "not-a-number"]})


def test_uncoercible_row_fails_the_build_with_its_position(tmp_path):
    with pytest.raises(IngestError) as info:
        build_segment(batches(), SCHEMA, make_table_config(SCHEMA), tmp_path, source="input.csv")
    assert info.value.row == 2
    assert info.value.source == "input.csv"
    assert "'x3'" in str(info.value) and "'n'" in str(info.value)
    assert list(tmp_path.iterdir()) == []  # no partial segment


def test_continue_on_error_skips_and_reports_rows(tmp_path):
    result = build_segment(
        batches(), SCHEMA, make_table_config(SCHEMA), tmp_path, continue_on_error=True
    )
    assert result.num_rows == 3 and result.num_rows_skipped == 2
    assert [e.row for e in result.errors] == [2, 4]
    assert "amount" in str(result.errors[1])
    assert list(load_segment(result.path).column("city").values()) == ["a", "b", "d"]


def test_table_level_continue_on_error(tmp_path):
    config = make_table_config(SCHEMA, ingestionConfig={"continueOnError": True})
    assert build_segment(batches(), SCHEMA, config, tmp_path).num_rows_skipped == 2


def test_row_positions_count_filtered_rows(tmp_path):
    config = make_table_config(
        SCHEMA,
        ingestionConfig={"filterFunction": None, "filterConfig": {"filterFunction": "city = 'a'"}},
    )
    result = build_segment(batches(), SCHEMA, config, tmp_path, continue_on_error=True)
    assert result.num_rows_filtered == 1
    assert [e.row for e in result.errors] == [2, 4]


def test_failure_mid_build_leaves_nothing(tmp_path, monkeypatch):
    import engine.segment.creator as creator

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(creator, "segment_crc", boom)
    table = pa.table({"city": ["a"], "n": [1], "amount": [1.0]})
    with pytest.raises(SegmentError, match="disk full"):
        build_segment(table, SCHEMA, make_table_config(SCHEMA), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_existing_segment_is_not_overwritten(tmp_path):
    table = pa.table({"city": ["a"], "n": [1], "amount": [1.0]})
    build_segment(table, SCHEMA, make_table_config(SCHEMA), tmp_path, segment_name="s")
    with pytest.raises(SegmentError, match="already exists"):
        build_segment(table, SCHEMA, make_table_config(SCHEMA), tmp_path, segment_name="s")
    with pytest.raises(SegmentError, match="invalid segment name"):
        build_segment(table, SCHEMA, make_table_config(SCHEMA), tmp_path, segment_name="../evil")


@pytest.fixture
def tarball(tmp_path):
    table = pa.table({"city": ["a", "b"] * 1000, "n": list(range(2000)), "amount": [1.0] * 2000})
    result = build_segment(table, SCHEMA, make_table_config(SCHEMA), tmp_path / "built")
    return pack_segment(result.path, tmp_path / "s.tar.gz")


def test_truncated_tar_raises_and_leaves_nothing(tmp_path, tarball):
    data = tarball.read_bytes()
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(data[: len(data) // 2])
    dest = tmp_path / "dest"
    with pytest.raises(SegmentError, match="corrupt or truncated"):
        unpack_segment(truncated, dest)
    assert list(dest.iterdir()) == []


def test_garbage_and_missing_archives(tmp_path):
    garbage = tmp_path / "g.tar.gz"
    garbage.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(SegmentError):
        unpack_segment(garbage, tmp_path / "dest")
    with pytest.raises(SegmentError, match="does not exist"):
        unpack_segment(tmp_path / "missing.tar.gz", tmp_path / "dest")
    assert list((tmp_path / "dest").iterdir()) == []


def test_archive_without_a_segment_and_path_traversal(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    evil = tmp_path / "evil.tar.gz"
    evil.write_bytes(gzip.compress(buf.getvalue()))
    with pytest.raises(SegmentError):
        unpack_segment(evil, tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()
    assert list((tmp_path / "dest").iterdir()) == []


def test_unpack_twice_refuses_to_overwrite(tmp_path, tarball):
    unpack_segment(tarball, tmp_path / "dest")
    with pytest.raises(SegmentError, match="already exists"):
        unpack_segment(tarball, tmp_path / "dest")


def test_load_errors(tmp_path):
    with pytest.raises(SegmentError, match="does not exist"):
        load_segment(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SegmentError, match=r"metadata\.json"):
        load_segment(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "metadata.json").write_text("{")
    with pytest.raises(SegmentError, match="corrupt"):
        load_segment(tmp_path / "bad")
    with pytest.raises(SegmentError, match="not a segment"):
        pack_segment(tmp_path / "empty", tmp_path / "x.tar.gz")


def test_tampered_data_fails_the_crc_check(tmp_path, tarball):
    extracted = tmp_path / "x"
    with tarfile.open(tarball) as tar:
        tar.extractall(extracted, filter="data")
    seg_dir = next(extracted.iterdir())
    data = bytearray((seg_dir / "columns.psf").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (seg_dir / "columns.psf").write_bytes(bytes(data))
    tampered = pack_segment(seg_dir, tmp_path / "tampered.tar.gz")
    with pytest.raises(SegmentError, match="CRC"):
        unpack_segment(tampered, tmp_path / "dest")
    assert list((tmp_path / "dest").iterdir()) == []
    assert unpack_segment(tampered, tmp_path / "dest", verify_crc=False).is_dir()


def test_an_archive_that_unpacks_past_the_cap_writes_nothing(tmp_path):
    seg = tmp_path / "seg"
    seg.mkdir()
    (seg / "metadata.json").write_text("{}")
    with (seg / "zeros.bin").open("wb") as out:
        out.truncate(5 << 20)
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz") as archive:
        archive.add(seg, arcname="seg")
    dest = tmp_path / "dest"
    with pytest.raises(SegmentTooLargeError, match="more than 1048576 bytes"):
        unpack_segment(bomb, dest, max_unpacked_bytes=1 << 20)
    assert list(dest.iterdir()) == []  # its temp folder is gone and nothing was extracted
