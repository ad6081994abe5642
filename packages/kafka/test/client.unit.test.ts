// kafkajs log entries must reach our logger at their own level, with kafkajs's extra fields.
import { logLevel } from 'kafkajs';
import { kafkajsLogToLogger, type KafkaLogger } from '../src';

it.each([
  [logLevel.ERROR, 'error'],
  [logLevel.WARN, 'warn'],
  [logLevel.INFO, 'info'],
  [logLevel.DEBUG, 'debug'],
] as const)('routes kafkajs level %s to logger.%s', (level, method) => {
  const calls: Array<[string, string, unknown]> = [];
  const logger: KafkaLogger = {
    error: (m, meta) => calls.push(['error', m, meta]),
    warn: (m, meta) => calls.push(['warn', m, meta]),
    info: (m, meta) => calls.push(['info', m, meta]),
    debug: (m, meta) => calls.push(['debug', m, meta]),
  };
  kafkajsLogToLogger(logger, {
    namespace: 'Connection',
    level,
    label: 'X',
    log: { timestamp: 't', message: 'boom', broker: 'b:1' },
  });
  expect(calls).toEqual([[method, 'kafkajs: boom', { broker: 'b:1', kafkajs: 'Connection' }]]);
});
