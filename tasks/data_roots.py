"""The data roots of this process, from its settings (``SPRIG_INPUT_ROOTS``,
``SPRIG_OUTPUT_ROOTS``, ``SPRIG_DEEP_STORE_URI``): the controller checks task configs and URI
pushes against them, and each minion checks its subtasks again against its own."""

from __future__ import annotations

from django.conf import settings

from engine.spi.data_roots import DataRoots

INPUT_ROOTS_SETTING = "SPRIG_INPUT_ROOTS"
OUTPUT_ROOTS_SETTING = "SPRIG_OUTPUT_ROOTS"


def readable_roots() -> DataRoots:
    """Where data files may be read: the deep store, the input roots and the output roots (a
    segment a minion wrote there is pushed by URI)."""
    roots = [settings.DEEP_STORE_URI, *settings.INPUT_ROOTS, *settings.OUTPUT_ROOTS]
    return DataRoots(roots, INPUT_ROOTS_SETTING)


def writable_roots() -> DataRoots:
    """Where minions may write segment files: the deep store and the output roots."""
    return DataRoots([settings.DEEP_STORE_URI, *settings.OUTPUT_ROOTS], OUTPUT_ROOTS_SETTING)
