"""A minimal task type, the way Pinot's SimpleMinionClusterIntegrationTest plugs in TestTask.

A task type is two classes joined by a type string, and one registration:

- ``generator.py``: TestTaskGenerator (runs on the lead controller) turns a table's
  ``task.taskTypeConfigsMap.TestTask`` into subtask configs;
- ``executor.py``: TestTaskExecutor (runs on a minion, a Celery worker) does one subtask;
- this module registers the pair. A minion and the controller both import it, here through
  ``SPRIG_MINION_TASK_PLUGINS=tests.tasks.example``; a built-in type registers in
  ``tasks/builtin.py`` instead.
"""

from tasks.registry import register

register(
    "TestTask",
    generator="tests.tasks.example.generator:TestTaskGenerator",
    executor="tests.tasks.example.executor:TestTaskExecutor",
)
