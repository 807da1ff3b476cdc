"""UpsertCompactionTask's data work on Spark: a real airlineStats segment rebuilt with only the
docs of a bitmap, in doc order, under its own name, with its custom metadata and
``UpsertCompactionTask.time``."""

from __future__ import annotations

import pytest

from spark_jobs.minion.upsert_compaction import COMPACTION_TIME_KEY, compact_segment
from tests.cluster.conftest import (  # noqa: F401 - fixtures
    airline_dir,
    airline_offline_config,
    airline_schema,
    airline_segments,
)
from tests.tasks.test_purge_spark import _rows, segment  # noqa: F401 - a fixture


@pytest.mark.integration
def test_only_the_valid_docs_stay_in_doc_order(spark, segment, tmp_path):  # noqa: F811
    directory, schema, config = segment
    name, custom, before = _rows(directory)
    valid = [i for i in range(len(before)) if i % 3 != 1]
    result, n_before, n_after = compact_segment(spark, directory, schema, config, valid[::-1],
                                                tmp_path / "out", 4321)  # fmt: skip
    out_name, out_custom, after = _rows(result.path)
    assert out_name == name and (n_before, n_after) == (len(before), len(valid))
    assert out_custom == {**custom, COMPACTION_TIME_KEY: "4321"}
    assert after == [before[i] for i in valid]
