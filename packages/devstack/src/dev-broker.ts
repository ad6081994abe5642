// Builds and runs the Kafka development broker (deploy/dev-broker, librdkafka's mock cluster)
// for local runs and tests, and drives its fault injection (broker down / up).
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';

export type DevBrokerOptions = {
  /** Number of mock brokers, numbered 1..n (default 1). */
  brokers?: number;
  /** Partitions of the three ingestion topics (default 16; the dead letter topic has 4). */
  partitions?: number;
  /** Extra topics (or overrides of the default ones): name -> partition count. */
  topics?: Record<string, number>;
  /** How long to wait for the broker to print its address (default 10 s). */
  startTimeoutMs?: number;
};

export type DevBroker = {
  /** Comma-separated host:port list, the form KAFKA_BROKERS takes. */
  bootstrap: string;
  brokers: string[];
  pid: number;
  setBrokerDown(id: number): Promise<void>;
  setBrokerUp(id: number): Promise<void>;
  stop(): Promise<void>;
};

const brokerDir = path.resolve(__dirname, '../../../deploy/dev-broker');
const COMMAND_TIMEOUT_MS = 5000;
const STOP_GRACE_MS = 3000;

let building: Promise<string> | undefined;

/** Compiles the broker if needed (see build.sh) and returns the binary's path; once per process. */
export function buildDevBroker(): Promise<string> {
  building ??= new Promise<string>((resolve, reject) => {
    execFile('bash', [path.join(brokerDir, 'build.sh')], { env: process.env }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`building the Kafka dev broker failed: ${error.message}\n${stderr}`));
        return;
      }
      const lines = stdout.trim().split('\n');
      resolve(lines[lines.length - 1] ?? path.join(brokerDir, 'bin/sett-dev-broker'));
    });
  }).catch((error: unknown) => {
    // A failed build must not be cached: the next caller may have fixed the machine.
    building = undefined;
    throw error;
  });
  return building;
}

/**
 * Starts a private broker on 127.0.0.1 with a fresh random port. Its stdin is a pipe from this
 * process, so it exits when this process dies, even on SIGKILL; the child is unref'd so a
 * forgotten broker never keeps node alive.
 */
export async function startDevBroker(opts: DevBrokerOptions = {}): Promise<DevBroker> {
  const binary = await buildDevBroker();
  const args: string[] = [];
  if (opts.brokers !== undefined) args.push('--brokers', String(opts.brokers));
  if (opts.partitions !== undefined) args.push('--partitions', String(opts.partitions));
  for (const [name, partitions] of Object.entries(opts.topics ?? {}))
    args.push('--topic', `${name}:${partitions}`);

  // Its own process group: a terminal's Ctrl-C reaches the owner, which drains the services
  // before stopping the broker. It still dies with the owner, through stdin EOF.
  const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const pid = child.pid;
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  // Writing to a broker that just died raises EPIPE on stdin; exit handling reports it instead.
  child.stdin.on('error', () => undefined);

  const exited = new Promise<number | string | null>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal));
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });

  // Each command gets exactly one reply line, in order.
  const replies: Array<(line: string) => void> = [];
  const lines = createInterface({ input: child.stdout });
  const bootstrap = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `Kafka dev broker (pid ${pid}) printed no BOOTSTRAP line within ${opts.startTimeoutMs ?? 10000} ms: ${stderr}`,
        ),
      );
    }, opts.startTimeoutMs ?? 10000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not start the Kafka dev broker ${binary}: ${error.message}`));
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`Kafka dev broker exited (${String(code)}) before it was ready: ${stderr}`));
    });
    lines.on('line', (line) => {
      if (line.startsWith('BOOTSTRAP ')) {
        clearTimeout(timer);
        resolve(line.slice('BOOTSTRAP '.length).trim());
        return;
      }
      replies.shift()?.(line);
    });
  });
  if (pid === undefined) throw new Error('Kafka dev broker started without a pid');

  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr])
    (stream as unknown as { unref?: () => void }).unref?.();

  const command = (cmd: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (hasExited) {
        reject(new Error(`Kafka dev broker (pid ${pid}) is not running`));
        return;
      }
      const timer = setTimeout(
        () => reject(new Error(`Kafka dev broker did not answer '${cmd}'`)),
        COMMAND_TIMEOUT_MS,
      );
      replies.push((line) => {
        clearTimeout(timer);
        if (line === 'OK') resolve();
        else reject(new Error(`Kafka dev broker refused '${cmd}': ${line}`));
      });
      child.stdin.write(`${cmd}\n`);
    });

  const stop = async (): Promise<void> => {
    if (hasExited) return;
    // EOF on stdin is the broker's normal way out; SIGKILL (to this pid only) if it hangs.
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };

  return {
    bootstrap,
    brokers: bootstrap.split(',').filter((b) => b.length > 0),
    pid,
    setBrokerDown: (id) => command(`down ${id}`),
    setBrokerUp: (id) => command(`up ${id}`),
    stop,
  };
}
