"""Minion-side halves of the task types: one ``<type>.py`` per type (see tasks.registry)."""
