"""Packing a segment to ``<name>.tar.gz`` and unpacking it, for the deep store and transfer."""

from __future__ import annotations

import os
import shutil
import tarfile
import uuid
import zlib
from pathlib import Path

from engine.common.errors import SegmentError
from engine.segment.files import METADATA_FILE

# what one uploaded or downloaded segment may unpack to (SPRIG_SEGMENT_MAX_UNPACKED_BYTES);
# a segment has a few files per column, so the member count bounds inodes, not real segments
DEFAULT_MAX_UNPACKED_BYTES = 8 << 30
MAX_MEMBERS = 100_000


class SegmentTooLargeError(SegmentError):
    """An archive that would unpack to more than allowed; nothing was written."""


def pack_segment(seg_dir: str | os.PathLike, tar_gz_path: str | os.PathLike) -> Path:
    """Write ``seg_dir`` as a tar.gz whose single top-level entry is the segment directory.
    The archive is written to a temp name and renamed, so readers never see half a file."""
    seg_dir = Path(seg_dir)
    if not (seg_dir / METADATA_FILE).is_file():
        raise SegmentError(f"{seg_dir} is not a segment directory")
    tar_gz_path = Path(tar_gz_path)
    tar_gz_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tar_gz_path.with_name(f".{tar_gz_path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        # Level 1: segment files are already compact; higher levels cost time for little gain.
        with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
            tar.add(seg_dir, arcname=seg_dir.name)
        os.replace(tmp, tar_gz_path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SegmentError(f"cannot pack {seg_dir} to {tar_gz_path}: {exc}") from exc
    return tar_gz_path


def extract_checked(tar_gz_path: Path, dest: Path, max_unpacked_bytes: int) -> None:
    """Extract a tar.gz into ``dest`` once its members' sizes, read first, add up to at most
    ``max_unpacked_bytes`` (and there are at most MAX_MEMBERS): a small archive must not
    expand into a full disk. ``filter="data"`` refuses links, devices and paths that leave
    ``dest``. SegmentError (naming the archive's file name only) otherwise."""
    name = tar_gz_path.name
    try:
        with tarfile.open(tar_gz_path, "r:gz") as tar:
            members, total = [], 0
            for member in tar:  # headers only: nothing is written yet
                members.append(member)
                total += member.size
                if total > max_unpacked_bytes or len(members) > MAX_MEMBERS:
                    raise SegmentTooLargeError(
                        f"segment archive {name} unpacks to more than {max_unpacked_bytes} "
                        f"bytes or {MAX_MEMBERS} files (SPRIG_SEGMENT_MAX_UNPACKED_BYTES)"
                    )
            tar.extractall(dest, members=members, filter="data")
    except tarfile.FilterError as exc:  # its own message names the destination directory
        raise SegmentError(f"segment archive {name}: member {exc.tarinfo.name!r} is refused "
                           f"({type(exc).__name__})") from exc  # fmt: skip
    except OSError as exc:
        raise SegmentError(f"segment archive {name} cannot be unpacked: {exc.strerror or exc}"
                           ) from exc  # fmt: skip
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise SegmentError(f"segment archive {name} is corrupt or truncated: {exc}") from exc


def unpack_segment(
    tar_gz_path: str | os.PathLike, dest_dir: str | os.PathLike, *, verify_crc: bool = True,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
) -> Path:  # fmt: skip
    """Extract a segment tar.gz into ``dest_dir`` and return the segment directory.

    Raises SegmentError for a missing, corrupt or truncated archive, one that unpacks to more
    than ``max_unpacked_bytes`` (SegmentTooLargeError, before anything is written), one that
    is not a single segment directory, one whose data does not match the CRC in its metadata
    (checked unless ``verify_crc`` is False), or one whose segment already exists in
    ``dest_dir``. Extraction goes to a temp directory first, so a failure leaves nothing
    behind. Messages name the archive's file name, never its directory.
    """
    tar_gz_path, dest_dir = Path(tar_gz_path), Path(dest_dir)
    if not tar_gz_path.is_file():
        raise SegmentError(f"segment archive {tar_gz_path.name} does not exist")
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest_dir / f".untar-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        extract_checked(tar_gz_path, tmp, max_unpacked_bytes)
        entries = [p for p in tmp.iterdir()]
        if len(entries) != 1 or not (entries[0] / METADATA_FILE).is_file():
            raise SegmentError(f"{tar_gz_path.name} does not hold exactly one segment directory")
        from engine.segment.loader import read_metadata

        metadata = read_metadata(entries[0])  # a truncated metadata file is corruption too
        if verify_crc:
            from engine.segment.creator import segment_crc

            actual = segment_crc(entries[0])
            if actual != metadata.crc:
                raise SegmentError(
                    f"segment {metadata.segment_name} in {tar_gz_path.name} is corrupt: "
                    f"CRC {actual} does not match {metadata.crc}"
                )
        final = dest_dir / entries[0].name
        if final.exists():
            raise SegmentError(f"segment directory {entries[0].name} already exists")
        os.rename(entries[0], final)
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
