"""The one exception tree of the batch-ingestion job. Every message names what is wrong and
where (the spec file, the field, the input file or the controller URL), so the CLI can print
it as one line instead of a traceback."""

from __future__ import annotations


class IngestionError(Exception):
    """Base of every error the batch-ingestion job raises on purpose."""


class SpecError(IngestionError):
    """The job spec is missing, unreadable, not YAML, or has a bad or missing field."""


class InputError(IngestionError):
    """The input directory is missing or holds no file that matches the patterns."""


class TableSourceError(IngestionError):
    """The schema or table config could not be fetched or does not exist."""


class PushError(IngestionError):
    """A segment push to the controller failed (rejected, or unreachable after all attempts)."""


class SparkJobError(IngestionError):
    """Spark could not be started, or its job failed as a whole (not one file's build)."""
