// Types shared across @sett/kafka. The logger is a minimal interface so that this library does
// not depend on @sett/logger; any winston-like logger fits.
export type KafkaLogger = {
  info(msg: string, meta?: Record<string, unknown>): void;
  warn(msg: string, meta?: Record<string, unknown>): void;
  error(msg: string, meta?: Record<string, unknown>): void;
  debug(msg: string, meta?: Record<string, unknown>): void;
};

const noop = (): void => undefined;

/** Used when the caller passes no logger: silence rather than console noise. */
export const silentLogger: KafkaLogger = { info: noop, warn: noop, error: noop, debug: noop };
