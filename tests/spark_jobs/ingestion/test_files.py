from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.ingestion.errors import InputError, SpecError
from spark_jobs.ingestion.files import (
    FilePattern,
    InputFile,
    list_input_files,
    list_segment_tars,
    local_path,
    segment_output_dir,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ["a.avro", "b.csv", "x/c.avro", "x/d.avro", "x/y/e.avro", "x/y/skip_f.avro"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    return tmp_path


def relatives(files: list[InputFile]) -> list[str]:
    return [f.relative for f in files]


@pytest.mark.parametrize(
    ("pattern", "relative", "expected"),
    [
        ("glob:*.avro", "a.avro", True),
        ("glob:*.avro", "x/c.avro", False),
        ("glob:**/*.avro", "x/y/e.avro", True),
        ("glob:**/*.avro", "a.csv", False),
        ("glob:x/?.avro", "x/c.avro", True),
        ("glob:*.{csv,avro}", "b.csv", True),
        ("glob:[ab].*", "b.csv", True),
        ("glob:[!ab].*", "b.csv", False),
        ("glob:\\*.avro", "*.avro", True),
        ("regex:.*/skip_.*", "x/y/skip_f.avro", True),
        ("*.csv", "b.csv", True),
    ],
)
def test_pattern_syntax(pattern: str, relative: str, expected: bool) -> None:
    assert FilePattern.parse(pattern).matches(relative, "/base/" + relative) is expected


def test_globstar_also_matches_files_directly_under_the_input_dir(tree: Path) -> None:
    # Pinot matches against the absolute path, so **/*.avro includes a.avro at the top.
    files = list_input_files(tree, include="glob:**/*.avro")
    assert relatives(files) == ["a.avro", "x/c.avro", "x/d.avro", "x/y/e.avro", "x/y/skip_f.avro"]


def test_single_star_is_only_the_top_level(tree: Path) -> None:
    assert relatives(list_input_files(tree, include="glob:*.avro")) == ["a.avro"]


def test_include_and_exclude(tree: Path) -> None:
    files = list_input_files(tree, include="glob:**/*.avro", exclude="glob:**/skip_*")
    assert relatives(files) == ["a.avro", "x/c.avro", "x/d.avro", "x/y/e.avro"]


def test_no_include_pattern_takes_every_file(tree: Path) -> None:
    assert len(list_input_files(tree)) == 6


def test_not_recursive(tree: Path) -> None:
    assert relatives(list_input_files(tree, recursive=False)) == ["a.avro", "b.csv"]


def test_sequence_ids_count_within_each_directory(tree: Path) -> None:
    files = list_input_files(tree, include="glob:**/*.avro")
    assert [(f.relative, f.sequence_id) for f in files] == [
        ("a.avro", 0),
        ("x/c.avro", 0),
        ("x/d.avro", 1),
        ("x/y/e.avro", 0),
        ("x/y/skip_f.avro", 1),
    ]


def test_global_sequence_ids(tree: Path) -> None:
    files = list_input_files(tree, include="glob:**/*.avro", global_sequence_id=True)
    assert [f.sequence_id for f in files] == [0, 1, 2, 3, 4]


def test_no_matching_file_names_the_patterns(tree: Path) -> None:
    with pytest.raises(InputError, match=r"no input file in .* matches .*glob:\*\*/\*\.parquet"):
        list_input_files(tree, include="glob:**/*.parquet")


def test_missing_input_dir(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        list_input_files(tmp_path / "missing")


def test_bad_patterns() -> None:
    with pytest.raises(SpecError, match="unclosed"):
        FilePattern.parse("glob:[abc")
    with pytest.raises(SpecError, match="invalid regex"):
        FilePattern.parse("regex:(")


def test_output_dir_mirrors_the_input_sub_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    nested = InputFile("/in/2014/01/my day/f.avro", "2014/01/my day/f.avro", 0)
    assert segment_output_dir(out, nested) == out / "2014/01/my_day"
    assert segment_output_dir(out, InputFile("/in/f.avro", "f.avro", 0)) == out


def test_local_path_forms(tmp_path: Path) -> None:
    assert local_path("file:///data/x") == Path("/data/x")
    assert local_path("rel/x", root=tmp_path) == tmp_path / "rel/x"
    assert local_path("/abs/./x") == Path("/abs/x")
    with pytest.raises(SpecError, match="scheme 's3' is not supported"):
        local_path("s3://bucket/x", what="inputDirURI")


def test_segment_tars_skip_metadata_tars(tmp_path: Path) -> None:
    for name in ["a/s1.tar.gz", "s2.tar.gz", "s2.metadata.tar.gz", "notes.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert [p.name for p in list_segment_tars(tmp_path)] == ["s1.tar.gz", "s2.tar.gz"]
    assert [p.name for p in list_segment_tars(tmp_path, "glob:a/*.tar.gz")] == ["s1.tar.gz"]
    with pytest.raises(InputError, match="no segment tar"):
        list_segment_tars(tmp_path / "a", "glob:nothing*")
