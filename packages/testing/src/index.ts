// @sett/testing: helpers for integration tests (per-file databases, unique names). The jest
// global setup and teardown live beside this file and are referenced from jest.config.js.
export { createTestDatabase, uniqueName, testServerUrl, TEMPLATE_DATABASE } from './db';
// Ending a pool before db.drop(): see endPool.
export { endPool } from '@sett/db';
export type { TestDatabase } from './db';
export { startTcpProxy } from './tcp-proxy';
export type { TcpProxy } from './tcp-proxy';
export { createTestCa } from './tls-certs';
export type { TestCa, TestCaOptions, PemPair } from './tls-certs';
export { startKafkaProxy } from './kafka-proxy';
export type { KafkaProxy, KafkaProxyOptions, KafkaProxySaslMechanism } from './kafka-proxy';
export { freePort } from './ports';
export { waitFor } from './wait-for';
export type { WaitForOptions } from './wait-for';
export { hourlyCountsDrift, propertyCountsDrift } from './hourly-counts';
export { prng } from './prng';
