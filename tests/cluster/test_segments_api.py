"""Segment upload (tar, URI, metadata push), assignment, listing, download and deletion, with
real segments built from the airlineStats example data."""

from __future__ import annotations

import copy
import io
import tarfile
from pathlib import Path

import pytest

from cluster.logic.deep_store import get_deep_store
from engine.clusterstate import SegmentState
from tests.cluster.conftest import register_servers, upload

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def table(api, airline_schema, airline_offline_config):
    """airlineStats_OFFLINE with replication 2 over three servers."""
    servers = register_servers(api, 3)
    config = copy.deepcopy(airline_offline_config)
    config["segmentsConfig"]["replication"] = "2"
    assert api.post("/schemas", airline_schema, format="json").status_code == 200
    assert api.post("/tables", config, format="json").status_code == 200
    return servers


def deep_files(cluster_settings) -> list[str]:
    root = Path(cluster_settings.DEEP_STORE_URI) / "airlineStats"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_upload_assigns_balanced_replicas_and_stores_metadata(api, store, table, airline_segments,
                                                              cluster_settings):  # fmt: skip
    for name, tar in airline_segments:
        response = upload(api, tar)
        assert response.status_code == 200, response.content
        assert name in response.json()["status"]
    ideal = store.ideal_state("airlineStats_OFFLINE")
    assert sorted(ideal.segments) == sorted(n for n, _ in airline_segments)
    for replicas in ideal.segments.values():
        assert len(replicas) == 2 and set(replicas.values()) == {"ONLINE"}
    load = {s: len(segs) for s, segs in ideal.segments_per_instance().items()}
    assert sorted(load.values()) == [2, 3, 3]  # 8 replicas over 3 servers, fewest-first
    assert set(load) == set(table)

    name, tar = airline_segments[0]
    meta = store.segment_metadata("airlineStats_OFFLINE", name)
    assert meta.total_docs == 30 and meta.time_unit == "DAYS"
    assert meta.start_time == meta.end_time == int(name.split("_")[1])
    assert meta.download_url == f"http://127.0.0.1:9000/segments/airlineStats/{name}"
    assert meta.size_in_bytes == tar.stat().st_size and meta.push_time_ms > 0
    assert deep_files(cluster_settings) == sorted(n for n, _ in airline_segments)

    listed = api.get("/segments/airlineStats").json()
    assert listed == [{"OFFLINE": sorted(n for n, _ in airline_segments)}]
    download = api.get(f"/segments/airlineStats/{name}")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == tar.read_bytes()
    metadata = api.get(f"/segments/airlineStats/{name}/metadata?columns=Carrier,Origin").json()
    assert metadata["crc"] == meta.crc and metadata["totalDocs"] == 30
    assert [c["columnName"] for c in metadata["columns"]] == ["Carrier", "Origin"]
    zk = api.get("/segments/airlineStats/zkmetadata").json()
    assert zk[name]["segment.total.docs"] == "30"
    servers = api.get("/segments/airlineStats/servers").json()
    assert servers[0]["tableName"] == "airlineStats_OFFLINE"


def test_same_name_refreshes_by_crc(api, store, table, airline_segments, tmp_path):
    name, tar = airline_segments[0]
    assert upload(api, tar).status_code == 200
    before = store.segment_metadata("airlineStats_OFFLINE", name)
    same = upload(api, tar)
    assert "same CRC" in same.json()["status"]
    assert store.segment_metadata("airlineStats_OFFLINE", name).refresh_time_ms == 0

    # the same segment name with other content: a refresh, replicas kept, servers told
    other_name, other_tar = airline_segments[1]
    renamed = _rename_segment(other_tar, other_name, name, tmp_path)
    response = upload(api, renamed)
    assert response.status_code == 200 and "refreshed" in response.json()["status"]
    after = store.segment_metadata("airlineStats_OFFLINE", name)
    assert after.crc != before.crc and after.refresh_time_ms > 0
    assert after.push_time_ms == before.push_time_ms
    replicas = store.ideal_state("airlineStats_OFFLINE").segments[name]
    for instance in replicas:
        kinds = [m.sub_type for m in store.messages(instance)]
        assert kinds == ["SEGMENT_REFRESH"]
    assert upload(api, renamed).json()["status"].endswith("nothing changed")


def _rename_segment(tar: Path, old: str, new: str, work: Path) -> Path:
    """A copy of a segment archive under another segment name (metadata rewritten)."""
    import orjson

    from engine.segment import pack_segment, unpack_segment

    seg_dir = unpack_segment(tar, work / "renamed")
    meta_path = seg_dir / "metadata.json"
    meta = orjson.loads(meta_path.read_bytes())
    meta["segmentName"] = new
    meta_path.write_bytes(orjson.dumps(meta))
    target = seg_dir.parent / new
    seg_dir.rename(target)
    return pack_segment(target, work / f"{new}.tar.gz")


def test_corrupt_or_truncated_upload_is_400_and_stores_nothing(api, store, table, airline_segments,
                                                               cluster_settings, tmp_path):  # fmt: skip
    _, tar = airline_segments[0]
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(tar.read_bytes()[: tar.stat().st_size // 2])
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"this is not a tar.gz at all")
    empty_tar = tmp_path / "empty.tar.gz"
    with tarfile.open(empty_tar, "w:gz") as handle:
        data = b"hello"
        info = tarfile.TarInfo("readme.txt")
        info.size = len(data)
        handle.addfile(info, io.BytesIO(data))
    for bad in (truncated, garbage, empty_tar):
        response = upload(api, bad)
        assert response.status_code == 400, bad
        assert "Invalid segment upload" in response.json()["error"]
    assert store.segment_names("airlineStats_OFFLINE") == []
    assert store.ideal_state("airlineStats_OFFLINE").segments == {}
    assert deep_files(cluster_settings) == []
    no_file = api.post("/segments?tableName=airlineStats&tableType=OFFLINE", {}, format="multipart")
    assert no_file.status_code == 400


def test_upload_to_unknown_table_is_404(api, table, airline_segments, cluster_settings):
    response = upload(api, airline_segments[0][1], table="nosuchtable")
    assert response.status_code == 404
    assert "nosuchtable_OFFLINE does not exist" in response.json()["error"]
    assert deep_files(cluster_settings) == []


def test_uri_and_metadata_push(api, store, table, airline_segments, cluster_settings):
    name, tar = airline_segments[0]
    cluster_settings.INPUT_ROOTS = [str(tar.parent)]  # where the pushed segments are
    response = api.post("/segments?tableName=airlineStats&tableType=OFFLINE&uploadType=URI",
                        headers={"DOWNLOAD_URI": tar.as_uri()})  # fmt: skip
    assert response.status_code == 200, response.content
    meta = store.segment_metadata("airlineStats_OFFLINE", name)
    assert meta.download_url == tar.as_uri() and meta.total_docs == 30
    assert deep_files(cluster_settings) == []  # URI push leaves the file where it is
    assert name in store.ideal_state("airlineStats_OFFLINE").segments

    from spark_jobs.ingestion.push import metadata_tar_bytes

    name2, tar2 = airline_segments[1]

    def metadata_push(uri: str):
        payload = io.BytesIO(metadata_tar_bytes(tar2, ("metadata.json",)))
        payload.name = f"{name2}.tar.gz"
        return api.post(
            "/v2/segments?tableName=airlineStats&tableType=OFFLINE&uploadType=METADATA",
            {name2: payload}, format="multipart", headers={"DOWNLOAD_URI": uri},
        )  # fmt: skip

    # servers fetch a METADATA push's DOWNLOAD_URI: only from the deep store, the output
    # roots or public hosts
    refused = metadata_push(tar2.as_uri())
    assert refused.status_code == 400 and "SPRIG_OUTPUT_ROOTS" in refused.json()["error"]
    cluster_settings.OUTPUT_ROOTS = [str(tar2.parent)]
    for uri in (
        "http://127.0.0.1:9/x.tar.gz",
        "http://169.254.169.254/latest/meta-data",
        "ftp://example.com/x.tar.gz",
        f"{tar2.parent.as_uri()}/../../etc/passwd",
    ):
        assert metadata_push(uri).status_code == 400, uri
    response = metadata_push(tar2.as_uri())
    assert response.status_code == 200, response.content
    meta2 = store.segment_metadata("airlineStats_OFFLINE", name2)
    assert meta2.download_url == tar2.as_uri() and meta2.size_in_bytes == tar2.stat().st_size
    missing_uri = api.post("/segments?tableName=airlineStats&uploadType=URI")
    assert missing_uri.status_code == 400 and "DOWNLOAD_URI" in missing_uri.json()["error"]
    bad_uri = api.post("/segments?tableName=airlineStats&uploadType=URI",
                       headers={"DOWNLOAD_URI": "file:///no/such/file.tar.gz"})  # fmt: skip
    assert bad_uri.status_code == 400


def test_delete_segments_and_table_removes_everything(api, store, table, airline_segments,
                                                      cluster_settings, fake_servers):  # fmt: skip
    servers = [fake_servers(ident) for ident in table]
    for _, tar in airline_segments:
        upload(api, tar)
    for server in servers:
        server.sync()
    store.refresh_external_views()
    first = airline_segments[0][0]
    assert (
        api.delete(f"/segments/airlineStats/{first}?type=OFFLINE&retention=0d").status_code == 200
    )
    assert first not in store.ideal_state("airlineStats_OFFLINE").segments
    assert store.segment_metadata("airlineStats_OFFLINE", first) is None
    assert first not in deep_files(cluster_settings)
    for server in servers:
        server.sync()  # a server drops what left the ideal state
    store.refresh_external_views()
    assert first not in store.external_view("airlineStats_OFFLINE").segments
    assert api.delete(f"/segments/airlineStats/{first}").status_code == 404

    response = api.delete("/tables/airlineStats?type=OFFLINE")
    assert response.status_code == 200
    assert store.ideal_state("airlineStats_OFFLINE") is None
    assert store.segment_names("airlineStats_OFFLINE") == []
    assert store.stat(store.paths.table_segments("airlineStats_OFFLINE")) is None
    assert not (Path(cluster_settings.DEEP_STORE_URI) / "airlineStats").exists()
    kept = list(
        (Path(cluster_settings.DEEP_STORE_URI) / "Deleted_Segments" / "airlineStats").iterdir()
    )
    assert len(kept) == len(airline_segments) - 1  # kept for 7 days unless retention=0d
    store.refresh_external_views()
    assert store.external_view("airlineStats_OFFLINE") is None
    for server in servers:
        server.sync()
        assert (
            store.current_states(server.ident, server.session)["airlineStats_OFFLINE"].segments
            == {}
        )


def test_external_view_size_and_status_follow_servers(api, store, table, airline_segments,
                                                      fake_servers):  # fmt: skip
    servers = {ident: fake_servers(ident) for ident in table}
    for _, tar in airline_segments[:2]:
        upload(api, tar)
    name = airline_segments[0][0]
    ideal = store.ideal_state("airlineStats_OFFLINE")
    bad_server = sorted(ideal.segments[name])[0]
    servers[bad_server].overrides[("airlineStats_OFFLINE", name)] = SegmentState.ERROR.value
    for server in servers.values():
        server.sync()
    store.refresh_external_views()
    view = api.get("/tables/airlineStats/externalview").json()
    assert view["REALTIME"] is None
    assert view["OFFLINE"][name][bad_server] == "ERROR"
    status = {s["segmentName"]: s for s in api.get("/tables/airlineStats/segmentsStatus").json()}
    assert status[name]["segmentStatus"] == "BAD" and status[name]["replicasOnline"] == 1
    assert status[airline_segments[1][0]]["segmentStatus"] == "GOOD"

    size = api.get("/tables/airlineStats/size").json()
    seg_size = store.segment_metadata("airlineStats_OFFLINE", name).size_in_bytes
    assert size["offlineSegments"]["segments"][name]["reportedSizeInBytes"] == seg_size
    assert size["offlineSegments"]["segments"][name]["estimatedSizeInBytes"] == 2 * seg_size

    # a server that goes away disappears from the external view
    gone = next(s for s in servers if s != bad_server and s in ideal.segments[name])
    servers[gone].stop()
    store.refresh_external_views()
    assert gone not in store.external_view("airlineStats_OFFLINE").segments[name]

    response = api.post("/segments/airlineStats/reset?errorSegmentsOnly=true")
    assert response.json()["numMessagesSent"] == 1
    assert [m.sub_type for m in store.messages(bad_server)] == ["SEGMENT_RESET"]
    reload = api.post("/segments/airlineStats/reload?type=OFFLINE")
    import orjson

    job = orjson.loads(reload.json()["status"])["airlineStats_OFFLINE"]
    assert job["numMessagesSent"] == "4"
    status = api.get(f"/segments/segmentReloadStatus/{job['reloadJobId']}").json()
    assert status["totalSegmentCount"] == 4 and status["successCount"] == 0
    message = next(m for m in store.messages(bad_server) if m.sub_type == "SEGMENT_RELOAD")
    store.delete(store.paths.message(bad_server, message.message_id))  # a server handled it
    status = api.get(f"/segments/segmentReloadStatus/{job['reloadJobId']}").json()
    assert status["successCount"] == 1
    jobs = api.get("/table/airlineStats/jobs?type=OFFLINE").json()
    assert job["reloadJobId"] in jobs
    instances = api.get("/tables/airlineStats/instances").json()
    assert instances["server"] == [{"tableType": "offline", "instances": sorted(table)}]


def test_deep_store_by_fsspec_url(api, store, table, airline_segments, cluster_settings, tmp_path):
    cluster_settings.DEEP_STORE_URI = (tmp_path / "viaurl").as_uri()  # file://...
    name, tar = airline_segments[0]
    assert upload(api, tar).status_code == 200
    assert (tmp_path / "viaurl" / "airlineStats" / name).read_bytes() == tar.read_bytes()
    assert get_deep_store().exists("airlineStats", name)


def test_storage_quota_rejects_uploads_with_403(api, store, airline_schema, airline_offline_config,
                                                airline_segments, cluster_settings):  # fmt: skip
    register_servers(api, 1)
    config = copy.deepcopy(airline_offline_config)
    first = airline_segments[0][1].stat().st_size
    config["quota"] = {"storage": f"{(first + first // 2) / 1024:.1f}K"}
    api.post("/schemas", airline_schema, format="json")
    assert api.post("/tables", config, format="json").status_code == 200
    assert upload(api, airline_segments[0][1]).status_code == 200
    response = upload(api, airline_segments[1][1])
    assert response.status_code == 403
    assert "quota.storage" in response.json()["error"]
    assert store.segment_names("airlineStats_OFFLINE") == [airline_segments[0][0]]
    assert deep_files(cluster_settings) == [airline_segments[0][0]]


def test_schema_update_with_reload_sends_reload_messages(api, store, table, airline_segments,
                                                         airline_schema):  # fmt: skip
    upload(api, airline_segments[0][1])
    evolved = copy.deepcopy(airline_schema)
    evolved["dimensionFieldSpecs"].append({"name": "Added", "dataType": "STRING"})
    body = api.put("/schemas/airlineStats?reload=true", evolved, format="json").json()
    assert body["reload"]["airlineStats_OFFLINE"]["numMessagesSent"] == "2"
    replicas = store.ideal_state("airlineStats_OFFLINE").segments[airline_segments[0][0]]
    for instance in replicas:
        assert [m.sub_type for m in store.messages(instance)] == ["SEGMENT_RELOAD"]


def test_dimension_table_segments_go_to_every_server(api, store, airline_schema,
                                                     airline_offline_config, airline_segments):  # fmt: skip
    servers = register_servers(api, 3)
    config = copy.deepcopy(airline_offline_config)
    config["isDimTable"] = True
    # Pinot requires a dimension table to be REFRESHed and its schema to have primary keys
    config["ingestionConfig"]["batchIngestionConfig"] = {"segmentIngestionType": "REFRESH"}
    api.post("/schemas", {**airline_schema, "primaryKeyColumns": ["FlightNum"]}, format="json")
    assert api.post("/tables", config, format="json").status_code == 200
    upload(api, airline_segments[0][1])
    replicas = store.ideal_state("airlineStats_OFFLINE").segments[airline_segments[0][0]]
    assert sorted(replicas) == servers
    (extra,) = register_servers(api, 1, first_port=8401)
    dry = api.post("/tables/airlineStats/rebalance?dryRun=true").json()
    assert sorted(dry["segmentAssignment"][airline_segments[0][0]]) == sorted([*servers, extra])


def test_delete_all_segments_of_a_table(api, store, table, airline_segments, cluster_settings):
    for _, tar in airline_segments[:2]:
        upload(api, tar)
    response = api.delete("/segments/airlineStats?type=OFFLINE&retention=0d")
    assert response.json() == {"status": "All segments of table airlineStats_OFFLINE deleted"}
    assert store.ideal_state("airlineStats_OFFLINE").segments == {}
    assert store.segment_names("airlineStats_OFFLINE") == []
    assert deep_files(cluster_settings) == []
    assert api.delete("/segments/airlineStats?retention=soon").status_code == 400


def test_partitioned_segments_record_pinot_partition_metadata(
    api, store, airline_schema, airline_offline_config, airline_dir, tmp_path
):
    """The broker prunes by ``segment.partition.metadata``; the upload must write it."""
    import fastavro
    import pyarrow as pa

    from engine.broker.routes import segment_info_from_metadata
    from engine.common.types import DataType
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig
    from engine.spi.partition import partition_function

    register_servers(api, 1)
    config = copy.deepcopy(airline_offline_config)
    config["tableIndexConfig"]["segmentPartitionConfig"] = {
        "columnPartitionMap": {"Carrier": {"functionName": "Murmur", "numPartitions": 4}}
    }
    assert api.post("/schemas", airline_schema, format="json").status_code == 200
    assert api.post("/tables", config, format="json").status_code == 200

    path = sorted((airline_dir / "rawdata").rglob("*.avro"))[0]
    with path.open("rb") as handle:
        rows = pa.Table.from_pylist(list(fastavro.reader(handle)))
    carriers = rows.column("Carrier").to_pylist()
    murmur4 = partition_function("Murmur", 4)
    expected = murmur4.partitions_of_values(carriers, DataType.STRING)
    schema = Schema.from_json(airline_schema)
    built = build_segment(
        rows, schema, TableConfig.from_json(config, schema=schema), tmp_path / "s"
    )
    tar = pack_segment(built.path, tmp_path / f"{built.name}.tar.gz")
    assert upload(api, tar).status_code == 200

    meta = store.segment_metadata("airlineStats_OFFLINE", built.name)
    info = segment_info_from_metadata(meta)
    assert sorted(info.partitions["Carrier"]) == expected
    assert info.partition_functions["Carrier"] == murmur4
    assert (
        api.get("/segments/airlineStats/zkmetadata")
        .json()[built.name]["segment.partition.metadata"]
        .startswith('{"columnPartitionMap"')
    )


def test_a_hybrid_tables_segment_downloads_by_its_raw_name(api, table, airline_segments,
                                                           airline_realtime_config):  # fmt: skip
    """Servers download from the URL recorded at upload, which has no type; once the table
    is hybrid that raw name must still work (the deep store keys segments by raw name)."""
    name, tar = airline_segments[0]
    assert upload(api, tar).status_code == 200
    assert api.post("/tables", airline_realtime_config, format="json").status_code == 200
    download = api.get(f"/segments/airlineStats/{name}")
    assert download.status_code == 200, download.content
    assert b"".join(download.streaming_content) == tar.read_bytes()
    typed = api.get(f"/segments/airlineStats_OFFLINE/{name}")
    assert typed.status_code == 200
    assert api.get("/segments/airlineStats/nope").status_code == 404
    assert api.get(f"/segments/noSuchTable/{name}").status_code == 404
    assert api.get(f"/segments/airlineStats/{name}?type=SIDEWAYS").status_code == 400
