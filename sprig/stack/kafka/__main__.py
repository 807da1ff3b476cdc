"""`python -m sprig.stack.kafka`: resolve the local Kafka's jars now (bin/sprig's set-up step)
and print their folder."""

import sys

from sprig.stack.kafka.jars import kafka_libs
from sprig.stack.process import ServiceError

try:
    print(kafka_libs())
except ServiceError as exc:
    print(f"sprig: {exc}", file=sys.stderr)
    sys.exit(3)
