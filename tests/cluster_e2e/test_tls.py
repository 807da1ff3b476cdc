"""TLS listeners with Pinot's keys through real processes (issue 26, item 2): the controller
(gunicorn) and the broker (the engine's own HTTP service) serve http and https at once
(``controller.access.protocols=http,https``, ``pinot.broker.client.access.protocols``) with a
self-signed certificate made here, in a password-protected PKCS12 keystore as Pinot takes it.
Real HTTPS clients (requests, pinotdb) verify it against the certificate itself."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, pkcs12
from cryptography.x509.oid import NameOID
from pinotdb import connect

from sprig.stack.process import free_port
from tests.cluster_e2e.conftest import TABLE, Cluster, load_airline, start_cluster, stop_cluster
from tests.secured_controller import write_properties

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PASSWORD = "keystore-pw"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(a PKCS12 keystore with a new key and its self-signed certificate for 127.0.0.1 and
    localhost, that certificate as PEM for the clients to trust)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sprig-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
        ]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    keystore = directory / "keystore.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"sprig", key, cert, None, BestAvailableEncryption(PASSWORD.encode())
    ))  # fmt: skip
    trusted = directory / "trusted.pem"
    trusted.write_bytes(cert.public_bytes(Encoding.PEM))
    return keystore, trusted


@pytest.fixture(scope="module")
def tls_cluster(zookeeper, pinot_examples, airline_tars, tmp_path_factory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("tls")
    keystore, trusted = self_signed(workdir)
    controller_https, broker_https = free_port(), free_port()
    conf = write_properties(workdir / "pinot.conf", {
        "controller.access.protocols": "http,https",
        "controller.access.protocols.https.port": str(controller_https),
        "controller.tls.keystore.path": str(keystore),
        "controller.tls.keystore.password": PASSWORD,
        "controller.tls.keystore.type": "PKCS12",
        "pinot.broker.client.access.protocols": "http,https",
        "pinot.broker.client.access.protocols.https.port": str(broker_https),
        "pinot.broker.tls.keystore.path": str(keystore),
        "pinot.broker.tls.keystore.password": PASSWORD,
    })  # fmt: skip
    running = start_cluster(zookeeper.address, workdir, servers=1,
                            extra_env={"SPRIG_PINOT_CONFIG": str(conf)})  # fmt: skip
    running.https = (controller_https, broker_https, str(trusted))
    try:
        load_airline(running, pinot_examples, airline_tars[:3], replication=1)
        running.wait_all_online()
        running.wait_broker_sees(running.total_rows)  # over the broker's plain listener
        yield running
    finally:
        stop_cluster(running)


def test_controller_and_broker_answer_over_https(tls_cluster):
    controller_port, broker_port, trusted = tls_cluster.https
    controller = f"https://127.0.0.1:{controller_port}"
    assert requests.get(f"{controller}/health", verify=trusted, timeout=10).text == "OK"
    tables = requests.get(f"{controller}/tables", verify=trusted, timeout=10).json()
    assert TABLE in tables["tables"]
    sql = {"sql": f"SELECT COUNT(*) FROM {TABLE}"}
    broker = f"https://127.0.0.1:{broker_port}"
    for _ in range(3):  # keep-alive requests over one TLS connection
        answer = requests.post(f"{broker}/query/sql", json=sql, verify=trusted, timeout=30)
        assert answer.json()["resultTable"]["rows"] == [[tls_cluster.total_rows]]
    cursor = connect(host="127.0.0.1", port=broker_port, path="/query/sql", scheme="https",
                     verify_ssl=ssl.create_default_context(cafile=trusted)).cursor()  # fmt: skip
    cursor.execute(f"SELECT COUNT(*) FROM {TABLE}")
    assert cursor.fetchone()[0] == tls_cluster.total_rows
    # the plain listeners keep serving next to the https ones
    assert tls_cluster.controller("GET", "/health").text == "OK"
    assert tls_cluster.query(sql["sql"])["resultTable"]["rows"] == [[tls_cluster.total_rows]]


def test_the_certificate_is_checked_and_plain_http_is_not_served_on_https_ports(tls_cluster):
    controller_port, broker_port, _ = tls_cluster.https
    for port in (controller_port, broker_port):
        with pytest.raises(requests.exceptions.SSLError):  # not signed by a known CA
            requests.get(f"https://127.0.0.1:{port}/health", timeout=10)
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(f"http://127.0.0.1:{port}/health", timeout=10)
    # a client that gives up mid-handshake costs the broker nothing: it still answers
    with socket.create_connection(("127.0.0.1", broker_port), timeout=5) as raw:
        raw.sendall(b"\x16\x03\x01\x00")
    context = ssl.create_default_context(cafile=tls_cluster.https[2])
    with context.wrap_socket(socket.create_connection(("127.0.0.1", broker_port), timeout=10),
                             server_hostname="127.0.0.1") as tls:  # fmt: skip
        tls.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert tls.recv(65536).startswith(b"HTTP/1.1 200 OK")
