"""Kafka consumer-offset monitoring: where each consumer group is, where each log ends, how far
behind the group is, and whether that is a problem.

The modules here import no Django, so the `sprig kafka-consumer-groups` command line, the
sampler and (later) the controller app share one implementation:

- `lag`: the one home of the offset-lag rule.
- `groups`: group, member and partition-row types, and ConsumerGroupCommand's row rules.
- `kafka_admin`: reads groups, commits and end offsets through confluent-kafka's AdminClient.
- `cgc_format`: ConsumerGroupCommand's text output (`--list`, `--describe`).
- `consumer_offsets/`: the `__consumer_offsets` record decoder.
- `evaluation/`: Burrow's partition/group status, time lag, alert rules.
- `sampler`: polls groups and produces lag samples as JSON records to a topic.
"""
