"""engine.spi.data_roots: a URI is opened only inside a configured root, whatever its
spelling (``..``, symlinks, percent-encoding, chained or foreign schemes)."""

from __future__ import annotations

import os

import pytest

from engine.spi.data_roots import DataRoots, OutsideRootsError


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "incoming"
    (root / "day").mkdir(parents=True)
    (root / "day" / "a.avro").write_bytes(b"x")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "secret.txt").write_text("top secret")
    os.symlink(secret / "secret.txt", root / "day" / "link.avro")
    os.symlink(secret, root / "linked_dir")
    return tmp_path, root, DataRoots([str(root), "s3://bucket/raw"], "SPRIG_INPUT_ROOTS")


def test_inside_a_root_gives_the_resolved_location(tree):
    _, root, roots = tree
    inside = root / "day" / "a.avro"
    assert roots.check(str(inside), "k") == str(inside.resolve())
    assert roots.check(inside.as_uri(), "k") == str(inside.resolve())
    assert roots.check(f"{root}/day/../day/a.avro", "k") == str(inside.resolve())
    assert roots.check(str(root), "k") == str(root.resolve())  # the root itself
    assert roots.check("s3://bucket/raw/2014/a.avro", "k") == "s3://bucket/raw/2014/a.avro"


@pytest.mark.parametrize(
    "spelling",
    [
        "{tmp}/secret/secret.txt",  # plainly outside
        "file://{tmp}/secret/secret.txt",
        "{root}/../secret/secret.txt",  # .. out of the root
        "file://{root}/../secret/secret.txt",
        "{root}/day/link.avro",  # a symlink in the root to a file outside it
        "{root}/linked_dir/secret.txt",  # through a symlinked directory
        "{root}-evil/x.avro",  # a sibling whose name starts with the root's
        "file://otherhost{root}/day/a.avro",  # another machine
        "/etc/passwd",
        "file:/etc/passwd",  # no "//": fsspec reads it as a relative local path
        "zip://a.avro::file://{root}/day/a.avro",  # a chained filesystem
        "s3://bucket/raw/../private/key",
        "s3://bucket/raw/%2e%2e/private/key",
        "s3://bucket/rawer/key",  # a prefix is whole segments
        "s3://other/raw/key",
        "gs://bucket/raw/key",  # the right path under a scheme no root has
        "webhdfs://127.0.0.1:9870/x",
        "ftp://127.0.0.1:21/x",
        "http://169.254.169.254/latest/meta-data",
        "data:,secret",
        "",
    ],
)
def test_outside_every_root_is_refused_naming_key_and_setting(tree, spelling):
    tmp, root, roots = tree
    uri = spelling.format(tmp=tmp, root=root)
    with pytest.raises(OutsideRootsError) as refused:
        roots.check(uri, "inputDirURI")
    assert refused.value.key == "inputDirURI"
    assert str(refused.value).startswith("inputDirURI ")
    assert "SPRIG_INPUT_ROOTS" in str(refused.value)
    assert not roots.contains(uri)


def test_no_roots_refuse_everything(tmp_path):
    roots = DataRoots(["", " "], "SPRIG_OUTPUT_ROOTS")
    with pytest.raises(OutsideRootsError, match="SPRIG_OUTPUT_ROOTS"):
        roots.check(str(tmp_path), "outputDirURI")
