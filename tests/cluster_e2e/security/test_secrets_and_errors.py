"""Leaks (issue 28, item 7): secrets in table configs, the ZooKeeper API outside the cluster,
and what error answers say."""

from __future__ import annotations

import copy
import json

import pytest
import requests
from kazoo.client import KazooClient

from tests.cluster_e2e.security.conftest import TABLE, segment_dir

pytestmark = pytest.mark.integration

SASL = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="k-pw-1";'
SECRET_VALUES = ("k-pw-1", "db-pw-2", "s3-key-3")


def _secret_table() -> dict:
    table = copy.deepcopy(TABLE)
    table["tableName"] = "secretive"
    table["metadata"] = {"customConfigs": {
        "sasl.jaas.config": SASL, "db.password": "db-pw-2", "owner": "team-a",
    }}  # fmt: skip
    table["ingestionConfig"] = {"batchIngestionConfig": {
        "segmentIngestionType": "APPEND", "segmentIngestionFrequency": "DAILY",
        "batchConfigMaps": [{"inputDirURI": "s3://bucket/in", "inputFormat": "csv",
                             "input.fs.prop.secretKey": "s3-key-3"}],
    }}  # fmt: skip
    return table


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRET_VALUES if secret in text]


def test_secrets_are_masked_when_read_and_kept_when_written_back(target):
    schema = {"schemaName": "secretive",
              "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING"}]}  # fmt: skip
    assert target.post("/schemas", json=schema).status_code == 200
    table = _secret_table()
    table["segmentsConfig"]["schemaName"] = "secretive"
    response = target.post("/tables", json=table)
    assert response.status_code == 200, response.text
    root = f"/{target.cluster.env['SPRIG_CLUSTER_NAME']}"
    znode = f"{root}/PROPERTYSTORE/CONFIGS/TABLE/secretive_OFFLINE"
    reads = {
        path: requests.get(f"{target.ctl}{path}", params=params, timeout=10)
        for path, params in (
            ("/tables/secretive", None), ("/tableConfigs/secretive", None),
            ("/zk/get", {"path": znode}), ("/console/tables/secretive", None),
        )
    }  # fmt: skip
    for path, response in reads.items():
        assert response.status_code == 200, path
        assert _leaks(response.text) == [], path
    shown = reads["/tables/secretive"].json()["OFFLINE"]
    assert shown["metadata"]["customConfigs"]["db.password"] == "*****"
    assert shown["metadata"]["customConfigs"]["owner"] == "team-a"

    # the ZooKeeper browser's round trip: GET the znode, PUT it back as it was shown
    assert requests.put(f"{target.ctl}/zk/put", params={"path": znode}, timeout=10,
                        data=reads["/zk/get"].content).status_code == 200  # fmt: skip
    # the console's edit: GET, change something else, PUT the masked config back
    shown["metadata"]["customConfigs"]["owner"] = "team-b"
    response = requests.put(f"{target.ctl}/tables/secretive", json=shown, timeout=30)
    assert response.status_code == 200, response.text
    zk = KazooClient(target.zk_address)
    zk.start()
    try:
        stored = zk.get(znode)[0].decode()
    finally:
        zk.stop()
        zk.close()
    assert _leaks(stored) == list(SECRET_VALUES) and "team-b" in stored
    assert (
        _leaks(json.dumps(requests.get(f"{target.ctl}/tables/secretive", timeout=10).json())) == []
    )
    target.assert_healthy()


def test_the_zookeeper_api_stays_inside_the_cluster(target):
    for path in ("/zookeeper/config", "/zookeeper", "/"):
        response = requests.get(f"{target.ctl}/zk/get", params={"path": path}, timeout=10)
        assert response.status_code == (200 if path == "/" else 403), path
        assert b"server." not in response.content  # /zookeeper/config's members
    listing = requests.get(f"{target.ctl}/zk/ls", params={"path": "/"}, timeout=10).json()
    assert listing == [target.cluster.env["SPRIG_CLUSTER_NAME"]]
    for method in ("PUT", "DELETE"):
        url = f"{target.ctl}/zk/{'put' if method == 'PUT' else 'delete'}"
        response = requests.request(method, url, params={"path": "/zookeeper/quota", "data": "x"},
                                    timeout=10)  # fmt: skip
        assert response.status_code == 403
    target.assert_healthy()


def test_errors_say_what_is_wrong_without_internal_paths(target, tmp_path):
    target.ensure_table()
    broker = target.cluster.broker_url
    for sql in ("SELECT * FROM victims LIMIT 99999999999999999999999",
                "SELECT * FROM victims LIMIT 5 OFFSET 99999999999999999999"):  # fmt: skip
        answer = requests.post(f"{broker}/query/sql", json={"sql": sql}, timeout=30).json()
        (error,) = answer["exceptions"]
        assert error["errorCode"] == 150 and "from 0 to 2147483647" in error["message"]
        assert "Overflow" not in json.dumps(answer)
    # a corrupt archive and a directory that is not a segment: neither names a folder
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(b"\x1f\x8b not really gzip")
    not_a_segment = tmp_path / "empty.tar.gz"
    import tarfile

    seg = segment_dir(tmp_path, "victims_nometa_0")
    (seg / "metadata.json").unlink()
    with tarfile.open(not_a_segment, "w:gz") as archive:
        archive.add(seg, arcname=seg.name)
    for tar in (corrupt, not_a_segment):
        response = target.upload(tar)
        assert response.status_code == 400
        message = response.json()["error"]
        assert "/tmp" not in message and str(tmp_path) not in message and "sprig-" not in message
    target.assert_healthy()
