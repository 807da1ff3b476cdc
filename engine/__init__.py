"""Sprig's data plane: segments, query execution, server and broker processes.

Layers read bottom-up: ``common`` (types, errors) -> ``spi`` (schema, table config) ->
``ingest`` (record readers, transforms) -> ``segment`` (immutable segment format) -> ``query``.
Nothing here imports Django or the controller-side packages.
"""
