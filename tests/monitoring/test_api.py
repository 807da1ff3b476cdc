"""The consumer-lag REST API's rules and errors without a Kafka cluster: alert rules are
validated by the evaluation module before they are stored, and every path is documented."""

from __future__ import annotations

import uuid

import orjson
import pytest
from rest_framework.test import APIClient

from monitoring.models import LagAlertEvent, LagAlertRule

pytestmark = pytest.mark.django_db

PATHS = [
    "/consumerGroups", "/consumerGroups/{group}", "/consumerGroups/{group}/lagHistory",
    "/consumerLagAlerts/rules", "/consumerLagAlerts/rules/{name}", "/consumerLagAlerts/events",
    "/v3/kafka", "/v3/kafka/{cluster}/consumer", "/v3/kafka/{cluster}/consumer/{group}/status",
    "/v3/kafka/{cluster}/consumer/{group}/lag",
]  # fmt: skip


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def test_rules_are_created_listed_and_deleted(api):
    body = {"name": "billing-behind", "groupPattern": "billing-*", "condition": "lag > 1000",
            "duration": "2m", "webhookUrl": "http://93.184.215.14/hook"}  # fmt: skip
    created = api.post("/consumerLagAlerts/rules", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json() == {"name": "billing-behind", "groupPattern": "billing-*",
                              "condition": "lag > 1000", "durationSeconds": 120.0,
                              "webhookUrl": "http://93.184.215.14/hook", "firingGroups": []}  # fmt: skip
    listed = api.get("/consumerLagAlerts/rules").json()["rules"]
    assert [r["name"] for r in listed] == ["billing-behind"]

    again = api.post("/consumerLagAlerts/rules", body, format="json")
    assert again.status_code == 409 and "already exists" in again.json()["error"]

    assert api.delete("/consumerLagAlerts/rules/billing-behind").status_code == 200
    assert not LagAlertRule.objects.exists()
    missing = api.delete("/consumerLagAlerts/rules/billing-behind")
    assert missing.status_code == 404 and "does not exist" in missing.json()["error"]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"name": "r", "groupPattern": "g", "condition": "lag < 5"}, "cannot read condition"),
        ({"name": "r", "groupPattern": "g", "condition": "status >= BAD"}, "unknown status"),
        ({"name": "r", "groupPattern": "g", "condition": "lag > 1", "duration": "5 fortnights"},
         "cannot read duration"),
        ({"name": "r", "condition": "lag > 1"}, "groupPattern"),
        ({"name": "r", "groupPattern": "g", "condition": "lag > 1", "webhookUrl": "not a url"},
         "webhookUrl"),
    ],
)  # fmt: skip
def test_bad_rules_are_refused_naming_what_is_wrong_and_nothing_is_stored(api, body, named):
    response = api.post("/consumerLagAlerts/rules", body, format="json")
    assert response.status_code == 400
    assert named in response.content.decode()
    assert not LagAlertRule.objects.exists()


def test_events_outlive_their_rule_and_list_newest_first(api):
    rule = LagAlertRule.objects.create(name="r", group_pattern="g*", condition="lag > 1")
    for at, state in ((1000, "firing"), (2000, "resolved")):
        LagAlertEvent.objects.create(rule=rule, rule_name="r", group="g1", state=state,
                                     at_ms=at, value=5, detail="lag 5")  # fmt: skip
    rule.delete()
    events = api.get("/consumerLagAlerts/events", {"limit": 5}).json()["events"]
    assert [(e["rule"], e["state"], e["atMs"]) for e in events] == [
        ("r", "resolved", 2000), ("r", "firing", 1000),
    ]  # fmt: skip
    assert api.get("/consumerLagAlerts/events", {"limit": 0}).status_code == 400


def test_without_the_lag_table_the_group_endpoints_say_what_to_create(api):
    response = api.get("/consumerGroups")
    assert response.status_code == 503
    assert "no consumer_offsets REALTIME table" in response.json()["error"]
    assert api.get("/consumerGroups/g/lagHistory", {"minutes": "x"}).status_code == 400
    # a group id with '/' (Kafka allows it) reaches the view, escaped or not
    for path in ("/consumerGroups/team/a", "/consumerGroups/team%2Fa/lagHistory"):
        assert api.get(path).status_code == 503, path


def test_every_consumer_lag_path_is_documented(client):
    schema = orjson.loads(client.get("/openapi.json?format=json").content)
    for path in PATHS:
        assert path in schema["paths"], path
        for operation in schema["paths"][path].values():
            assert operation.get("summary")


def test_the_alert_evaluator_is_a_periodic_task_that_needs_no_kafka_without_rules():
    from cluster.periodic import get_task
    from monitoring.logic.alert_rules import evaluate_all

    assert get_task("ConsumerLagAlertEvaluator").default_frequency == "1m"
    assert evaluate_all() == {}


def test_an_event_whose_webhook_is_down_is_kept_with_the_reason(settings):
    from monitoring.evaluation.alerts import AlertEvent
    from monitoring.logic.alert_rules import record

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.0/8"]  # a loopback webhook, allowed by the operator
    rule = LagAlertRule.objects.create(name="r", group_pattern="g", condition="lag > 1",
                                       webhook_url="http://127.0.0.1:1/hook")  # fmt: skip
    stored = record(rule, AlertEvent("r", "g", "firing", 5000, 7.0, "lag 7"))
    stored.refresh_from_db()
    assert stored.state == "firing" and stored.value == 7.0
    assert stored.delivery_error.startswith("POST http://127.0.0.1:1/hook failed")
    assert stored.to_json()["deliveryError"] == stored.delivery_error


def test_burrow_paths_without_a_watched_cluster_answer_in_burrows_shape(api):
    clusters = api.get("/v3/kafka").json()
    assert clusters["error"] is False and clusters["message"] == "cluster list returned"
    assert clusters["clusters"] == []
    assert clusters["request"]["url"] == "/v3/kafka" and clusters["request"]["host"]
    consumers = api.get("/v3/kafka/local/consumer")
    assert consumers.status_code == 404
    assert consumers.json() == {"error": True, "message": "cluster not found",
                                "request": consumers.json()["request"]}  # fmt: skip
    for suffix in ("status", "lag"):
        answer = api.get(f"/v3/kafka/local/consumer/team/a/{suffix}")
        assert answer.status_code == 404
        body = answer.json()
        assert (body["error"], body["message"]) == (False, "consumer status returned")
        assert body["status"]["group"] == "team/a" and body["status"]["status"] == "NOTFOUND"


@pytest.fixture
def zk_settings(settings, zookeeper):
    """/metrics reads the segment status from ZooKeeper: the session's real one."""
    from controller.zk import close_zk

    settings.ZK_ADDRESS = zookeeper.address
    settings.CLUSTER_NAME = f"test_{uuid.uuid4().hex[:10]}"
    yield settings
    close_zk()


@pytest.mark.integration
def test_metrics_has_no_consumer_lag_series_without_a_watched_cluster(client, zk_settings):
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "# TYPE pinot_controller_segmentCount gauge" in text
    assert "kafka_consumergroup" not in text


@pytest.mark.integration
def test_an_unreachable_kafka_is_a_503_in_burrows_shape_and_a_comment_in_metrics(
    api, client, zk_settings
):
    from cluster.models import TableConfig
    from monitoring import tables
    from monitoring.logic import metrics

    TableConfig.objects.create(table_name="consumer_offsets", table_type="REALTIME",
                               config=tables.table_config("127.0.0.1:1"))  # fmt: skip
    assert api.get("/v3/kafka").json()["clusters"] == ["local"]
    down = api.get("/v3/kafka/local/consumer")
    assert down.status_code == 503 and down.json()["error"] is True
    assert "127.0.0.1:1" in down.json()["message"]
    metrics._exporter = None  # a fresh exporter: no poll cached from another test
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "# consumer lag not polled: could not list the consumer groups" in text
    assert "kafka_consumergroup_group_lag{" not in text
