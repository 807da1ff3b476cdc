"""The task manager's verbs, shared by the REST views, the scheduler and the driver loop."""
