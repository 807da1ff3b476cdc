"""One exception tree for consumer-offset monitoring."""


class MonitoringError(Exception):
    """Base of every error raised by the monitoring package."""


class KafkaUnavailableError(MonitoringError):
    """The Kafka cluster could not be reached or did not answer in time."""


class GroupStateError(MonitoringError):
    """A group reported a state that the describe output has no rule for (Kafka's tool fails
    the same way)."""


class OffsetsDecodeError(MonitoringError):
    """A `__consumer_offsets` record of a known type whose bytes do not follow its schema."""


class RuleError(MonitoringError):
    """An alert rule that cannot be parsed or evaluated."""
