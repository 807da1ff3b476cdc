"""The built-in task types (one registration each; see tasks.registry)."""
