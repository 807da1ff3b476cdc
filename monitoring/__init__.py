"""Kafka consumer-offset monitoring: where each consumer group is, where each log ends, how far
behind the group is, and whether that is a problem.

The plain modules here import no Django, so the command line (`sprig kafka-consumer-groups`,
`sprig consumer-offsets`) and the controller app share one implementation:

- `lag`: the one home of the offset-lag rule.
- `groups`: group, member and partition-row types, and ConsumerGroupCommand's row rules.
- `kafka_admin`: reads groups, commits and end offsets through confluent-kafka's AdminClient.
- `cgc_format`: ConsumerGroupCommand's text output (`--list`, `--describe`).
- `consumer_offsets/`: the `__consumer_offsets` record decoder.
- `evaluation/`: Burrow's partition/group status, time lag, alert rules.
- `sampler`: polls groups and produces lag samples as JSON records to a topic.
- `stream`: the `__consumer_offsets` -> JSON topic job (`sprig consumer-offsets stream`).
- `exporter`: kafka-lag-exporter's Prometheus series from the collector's polls.
- `tables/`, `lag_table`, `history`: the `consumer_offsets` REALTIME table and its SQL.

The controller side (Django): `models`, `api/` (REST and Burrow's v3 paths), `logic/`
(describe with status, Burrow bodies, alert rules, `/metrics` source), `periodic`.
"""
