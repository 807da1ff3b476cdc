"""The controller's answers match its OpenAPI schema: schemathesis generates requests for every
operation of ``/openapi.json`` (DELETE left out: it would tear down what the others read)
against a controller holding a real table, segment, server, minion task and task metadata,
and checks each response against the schema documented for its status code."""

from __future__ import annotations

import re

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance

from engine.clusterstate import ZNRecord
from tests.cluster.conftest import register_servers, upload

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db,
    # schemathesis' own strategies draw from `random`; nothing this test can change
    pytest.mark.filterwarnings(
        "ignore:Do not use the `random` module:hypothesis.errors.HypothesisDeprecationWarning"
    ),
]

EXAMPLES_PER_OPERATION = 4
TABLE = "airlineStats"


@pytest.fixture
def controller(api, store, fake_servers, airline_schema, airline_offline_config,
               airline_segments) -> dict[str, str]:  # fmt: skip
    """A controller with the airlineStats table, one segment ONLINE on a server, a minion and
    the MergeRollupTask it ran, and MergeRollupTask metadata; the path parameters that name
    them."""
    from tasks.metadata import write_metadata

    [server] = register_servers(api, 1)
    fake_servers(server).follow()
    assert api.post("/schemas", airline_schema, format="json").status_code == 200
    assert api.post("/tables", airline_offline_config, format="json").status_code == 200
    segment, tar = airline_segments[0]
    assert upload(api, tar).status_code == 200
    watermark = ZNRecord(id="MergeRollupTask", simple_fields={"watermarkMs_daily": "0"})
    write_metadata(store, f"{TABLE}_OFFLINE", "MergeRollupTask", watermark)
    return {"table": TABLE, "schema": TABLE, "task": ran_task(api, segment), "segment": segment,
            "instance": server, "task_type": "MergeRollupTask", "tenant": "DefaultTenant"}  # fmt: skip


def ran_task(api, segment: str) -> str:
    """A MergeRollupTask as the controller records it once a minion has run it (its rows in
    the task store); its name."""
    from tasks.models import Subtask, Task, TaskQueue

    body = {"host": "127.0.0.1", "port": 9514, "type": "MINION"}
    assert api.post("/instances", body, format="json").status_code == 200
    name = f"Task_MergeRollupTask_{TABLE}_OFFLINE_1"
    queue = TaskQueue.objects.create(task_type="MergeRollupTask", created_ms=1)
    task = Task.objects.create(
        name=name, queue=queue, task_type="MergeRollupTask", table_name=f"{TABLE}_OFFLINE",
        state="COMPLETED", minion_instance_tag="minion_untagged", timeout_ms=60_000,
        created_ms=1, execution_start_ms=2, finish_ms=9,
    )  # fmt: skip
    Subtask.objects.create(
        task=task, name=f"{name}_0", index=0, table_name=f"{TABLE}_OFFLINE",
        configs={"tableName": f"{TABLE}_OFFLINE", "segmentName": segment}, state="COMPLETED",
        attempts=1, worker="Minion_127.0.0.1_9514", start_ms=3, finish_ms=8,
        progress="merged 1 segment", result={"segments": [segment]},
    )  # fmt: skip
    return name


def test_every_answer_matches_its_documented_schema(controller):
    schema = schemathesis.openapi.from_wsgi("/openapi.json", get_wsgi_application())
    failures, checked, answered = [], 0, 0
    for result in schema.get_all_operations():
        operation = result.ok()  # raises for an operation whose schema cannot be read
        if operation.method.upper() == "DELETE":
            continue
        known = _path_parameters(operation.path, controller)
        statuses: list[int] = []
        try:
            _check(operation, known, statuses)
        except (Failure, FailureGroup) as exc:  # one per operation, all listed at the end
            failures.append(f"{operation.label}: " + "\n".join(str(exc).splitlines()[:12]))
        checked += 1
        answered += any(200 <= status < 300 for status in statuses)
    assert checked > 100, f"only {checked} operations in the schema"
    # most answers are real ones, not only the errors of made-up names
    assert answered > checked // 2, f"only {answered} of {checked} operations answered 2xx"
    assert not failures, f"{len(failures)} operations answer off their schema:\n\n" + (
        "\n\n".join(failures)
    )


def _path_parameters(path: str, controller: dict[str, str]) -> dict[str, str]:
    """The path's parameters that name something the controller holds; ``{name}`` is a
    schema's, a tenant's or a task's, by the path. The others are generated."""
    named = {**controller, "name": controller["task"]}
    if path.startswith("/schemas/"):
        named["name"] = controller["schema"]
    elif path.startswith("/tenants/"):
        named["name"] = controller["tenant"]
    return {name: named[name] for name in re.findall(r"{(\w+)}", path) if name in named}


def _check(operation, path_parameters: dict[str, str], statuses: list[int]) -> None:
    """Runs the operation's examples and ``EXAMPLES_PER_OPERATION`` generated requests,
    appending each status to ``statuses``; raises schemathesis' failures."""

    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy(path_parameters=path_parameters))
    def answers_as_documented(case) -> None:
        response = case.call_and_validate(checks=[response_schema_conformance])
        statuses.append(response.status_code)

    answers_as_documented()
