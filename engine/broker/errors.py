"""Errors of the broker process and the Pinot error codes it reports in ``exceptions``."""

from __future__ import annotations

from engine.runtime.errors import ProcessError

SEGMENTS_UNAVAILABLE_ERROR_CODE = 305
BROKER_TIMEOUT_ERROR_CODE = 400
BROKER_RESOURCE_MISSING_ERROR_CODE = 410
SERVER_NOT_RESPONDING_ERROR_CODE = 427
BROKER_REQUEST_ERROR_CODE = 200


class BrokerError(ProcessError):
    """Something the broker process could not do."""


class BadBrokerRequest(BrokerError):
    """A client's query request is malformed (not JSON, no ``sql``, bad ``queryOptions``)."""
