#!/bin/sh
# Creates Sett's Kafka topics when they are missing; run once before the services start
# (the `kafka-init` one-shot in docker-compose.yml, inside the apache/kafka image). The broker
# has topic auto-creation turned off, so a typo in a topic name fails loudly instead of
# silently creating a 1-partition topic.
#
# Partition counts are the ceiling on ingestion parallelism (one consumer per partition per
# group). They are read only when a topic is created: raising one later is a deliberate
# `kafka-topics.sh --alter`, because it moves keys to other partitions and so briefly breaks
# per-person ordering. Existing topics are left alone and only described.
#
# Prints one summary line per topic (partition count, replication) for the operator.
#
# Env: KAFKA_BOOTSTRAP (comma list host:port), KAFKA_REPLICATION_FACTOR,
#      TOPIC_PARTITIONS_MAIN / _OVERFLOW / _HISTORICAL / _DEAD_LETTER,
#      KAFKA_COMMAND_CONFIG: optional path to a Kafka client properties file (SASL, TLS) passed
#      to kafka-topics.sh as --command-config; docs/kafka.md shows one.
set -eu

KAFKA_TOPICS="${KAFKA_TOPICS_BIN:-/opt/kafka/bin/kafka-topics.sh}"
BOOTSTRAP="${KAFKA_BOOTSTRAP:-kafka:9092}"
REPLICATION="${KAFKA_REPLICATION_FACTOR:-1}"

topics() {
  if [ -n "${KAFKA_COMMAND_CONFIG:-}" ]; then
    "$KAFKA_TOPICS" --bootstrap-server "$BOOTSTRAP" --command-config "$KAFKA_COMMAND_CONFIG" "$@"
  else
    "$KAFKA_TOPICS" --bootstrap-server "$BOOTSTRAP" "$@"
  fi
}

create() {
  topic="$1"
  partitions="$2"
  echo "topic ${topic}: ensuring it exists (${partitions} partitions if created, replication ${REPLICATION})"
  topics --create --if-not-exists \
    --topic "$topic" --partitions "$partitions" --replication-factor "$REPLICATION"
}

create events_plugin_ingestion "${TOPIC_PARTITIONS_MAIN:-12}"
create events_plugin_ingestion_overflow "${TOPIC_PARTITIONS_OVERFLOW:-6}"
create events_plugin_ingestion_historical "${TOPIC_PARTITIONS_HISTORICAL:-6}"
create events_dead_letter "${TOPIC_PARTITIONS_DEAD_LETTER:-1}"

topics --describe \
  --topic 'events_(plugin_ingestion(_overflow|_historical)?|dead_letter)' | grep -v 'Partition: ' || true
echo "topics ready"
