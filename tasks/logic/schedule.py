"""Schedule tasks now: ``POST /tasks/schedule`` (manual), the cron jobs and the periodic
PinotTaskManager all come here; ``POST /tasks/execute`` (ad hoc) has its own entry."""

from __future__ import annotations

import dataclasses
import logging

from controller.errors import BadRequest, Conflict, NotFound
from engine.clusterstate import ClusterStore
from tasks import registry
from tasks.errors import GenerationError, SchedulingError, TaskConfigError
from tasks.generators.base import configured_task_types, table_task_config
from tasks.logic.dispatch import dispatch_waiting
from tasks.logic.generate import generate_task, minion_tag_of, queue_state
from tasks.models import Task
from tasks.names import adhoc_task_name
from tasks.states import BLOCKING_QUEUE_STATES, TriggeredBy
from tasks.tables import table_rows

log = logging.getLogger(__name__)


@dataclasses.dataclass
class ScheduleOutcome:
    scheduled: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    generation_errors: list[str] = dataclasses.field(default_factory=list)
    scheduling_errors: list[str] = dataclasses.field(default_factory=list)

    def response(self) -> dict[str, str]:
        """Pinot's shape: ``{"<Type>": "name1,name2", "generationErrors", "schedulingErrors"}``;
        a type with nothing to schedule maps to ""; a type whose scheduling failed is absent."""
        body = {task_type: ",".join(names) for task_type, names in self.scheduled.items()}
        body["generationErrors"] = "; ".join(self.generation_errors)
        body["schedulingErrors"] = "; ".join(self.scheduling_errors)
        return body


def schedule_tasks(
    store: ClusterStore,
    *,
    task_type: str | None = None,
    table_name: str | None = None,
    minion_tag: str | None = None,
    triggered_by: TriggeredBy = TriggeredBy.MANUAL_TRIGGER,
) -> ScheduleOutcome:
    """Generate every configured (table, type) pair, narrowed by the arguments."""
    if task_type is not None:
        registry.task_type(task_type)  # UnknownTaskTypeError
    outcome = ScheduleOutcome()
    for row in table_rows(table_name):
        types = [task_type] if task_type else configured_task_types(row.config)
        for kind in types:
            _schedule_one(store, row, kind, minion_tag, triggered_by, outcome,
                          explicit=bool(task_type and table_name))  # fmt: skip
    if any(outcome.scheduled.values()):
        try:
            dispatch_waiting(store)
        except Exception as exc:  # the tasks are recorded; the driver sends them later
            outcome.scheduling_errors.append(
                f"tasks were recorded but could not be sent to the minions yet: {exc}"
            )
    return outcome


def _schedule_one(store, row, kind, minion_tag, triggered_by, outcome, *, explicit) -> None:
    table = row.name_with_type
    task_config = table_task_config(row.config, kind)
    if task_config is None:
        if explicit:
            outcome.generation_errors.append(
                f"Table {table} has no {kind} in task.taskTypeConfigsMap"
            )
        return
    if minion_tag and minion_tag_of(task_config) != minion_tag:
        return
    try:
        name = generate_task(store, kind, row.config, table, task_config, triggered_by)
    except (GenerationError, TaskConfigError, registry.UnknownTaskTypeError) as exc:
        outcome.generation_errors.append(f"{kind} on {table}: {exc}")
        return
    except SchedulingError as exc:
        outcome.scheduling_errors.append(f"{kind} on {table}: {exc}")
        return
    names = outcome.scheduled.setdefault(kind, [])
    if name:
        names.append(name)


def execute_adhoc(store: ClusterStore, task_type: str, table_name: str,
                  task_name: str | None, task_configs: dict) -> dict[str, str]:  # fmt: skip
    """Pinot's ad-hoc run: ``{tableNameWithType: taskName}``; ``{}`` while the queue is
    stopped. NotFound for an unknown type or table, Conflict if the task exists, BadRequest
    when nothing was generated or a config is wrong."""
    try:
        registry.task_type(task_type)
    except registry.UnknownTaskTypeError as exc:
        raise NotFound(str(exc)) from None
    rows = table_rows(table_name)
    if queue_state(task_type) in BLOCKING_QUEUE_STATES:
        return {}
    overrides = {str(k): str(v) for k, v in (task_configs or {}).items()}
    created: dict[str, str] = {}
    for row in rows:
        table = row.name_with_type
        name = adhoc_task_name(task_type, table, task_name)
        if Task.objects.filter(name=name).exists():
            raise Conflict(f"Task {name} already exists")
        config = {**(table_task_config(row.config, task_type) or {}), **overrides}
        try:
            made = generate_task(store, task_type, row.config, table, config,
                                 TriggeredBy.ADHOC_TRIGGER, name=name)  # fmt: skip
        except (GenerationError, TaskConfigError, SchedulingError) as exc:
            raise BadRequest(str(exc)) from None
        if made is None:
            raise BadRequest(f"No ad-hoc {task_type} task was generated for table {table}")
        created[table] = made
    try:
        dispatch_waiting(store)
    except Exception:  # recorded; the driver sends them when the broker answers
        log.warning("ad-hoc tasks recorded but not yet sent", exc_info=True)
    return created
