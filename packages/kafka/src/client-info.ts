// `sett_kafka_client_info{client, librdkafka}`: which Kafka client a service produces with, so a
// fallback to kafkajs (node-rdkafka not built) shows on /_metrics and can be alerted on.
import { Gauge, type Registry } from 'prom-client';
import { loadRdkafka } from './rdkafka-binding';
import type { KafkaClientName } from './producer-types';

export function registerKafkaClientInfo(registry: Registry, client: KafkaClientName): void {
  const loaded = loadRdkafka();
  new Gauge({
    name: 'sett_kafka_client_info',
    help: 'Always 1; `client` names the Kafka client producing (node-rdkafka or kafkajs), `librdkafka` its library version when loaded',
    labelNames: ['client', 'librdkafka'],
    // A cluster primary summing its workers still reports 1.
    aggregator: 'first',
    registers: [registry],
  }).set({ client, librdkafka: 'module' in loaded ? loaded.module.librdkafkaVersion : 'none' }, 1);
}
