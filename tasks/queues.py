"""The Celery queues the minions listen on. A minion's instance tag is its queue."""

from enum import StrEnum


class MinionQueue(StrEnum):
    # Pinot's default minion instance tag; a minion with no tag listens here
    UNTAGGED = "minion_untagged"

    @classmethod
    def for_tag(cls, tag: str | None) -> str:
        """The queue of a `minionInstanceTag`; no tag means the untagged queue."""
        return tag or cls.UNTAGGED.value
