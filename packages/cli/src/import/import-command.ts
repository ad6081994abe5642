// `sett import`: read a file of past events, validate and convert each record, send the good
// ones through capture's /batch/ (historical path) with several requests in flight and each
// person's events in file order, write rejects with their line numbers, and keep a checkpoint
// after every acknowledged batch so that an interrupted run resumes where it stopped.
// Exactly-once storage comes from deterministic uuids (import-event.ts) and ingestion writing
// events idempotently on (team, uuid): a record sent twice is stored once.
import fs from 'node:fs';
import path from 'node:path';
import { createCaptureClient, ImportAbortedError, type BatchItem } from './capture-client';
import { csvToEvent, parseCsvHeader, type CsvHeader } from './csv-record';
import {
  countBelow,
  defaultCheckpointPath,
  defaultRejectsPath,
  openRejectsFile,
  projectFingerprint,
  readCheckpoint,
  writeCheckpoint,
  type Checkpoint,
} from './import-checkpoint';
import { convertRecord, type ImportFormat } from './import-event';
import { createImportProgress, type ImportProgress } from './import-progress';
import { inspectInput, readRecords, type RecordPosition } from './record-reader';
import { createSendLanes } from './send-lanes';

/** A problem with how the command was called (exit code 2). */
export class ImportUsageError extends Error {}

export type ImportOptions = {
  file: string;
  apiKey: string;
  url: string;
  format: ImportFormat;
  dryRun?: boolean;
  resume?: boolean;
  checkpointPath?: string;
  rejectsPath?: string;
  /** Uncompressed bytes of events per request. */
  batchBytes?: number;
  /** Requests in flight (and distinct_id partitions). */
  concurrency?: number;
  /** Capture's per-event limit (KAFKA_MESSAGE_MAX_BYTES). */
  maxEventBytes?: number;
  maxAttempts?: number;
  signal?: AbortSignal;
  /** Progress display; a cli-progress bar or plain lines on stderr by default. */
  progress?: (totalBytes: number, startBytes: number) => ImportProgress;
};

export type ImportSummary = {
  status: 'completed' | 'interrupted' | 'failed';
  file: string;
  format: ImportFormat;
  dry_run: boolean;
  /** Records read in this run (after the resume point). */
  read: number;
  /** Events put in requests to capture. */
  sent: number;
  /** Events in requests capture answered 200: Kafka acknowledged them. */
  accepted: number;
  rejected: number;
  /** Null when nothing was rejected (no file is written). */
  rejects_file: string | null;
  checkpoint: string | null;
  resumed_from_line: number | null;
  seconds: number;
  events_per_second: number;
  error?: string;
};

export const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024;
/** Every request stays under capture's 20 MB wire and (by default) 20 MB decompressed caps. */
export const MAX_BATCH_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_EVENT_BYTES = 1_000_000;

export async function runImport(opts: ImportOptions): Promise<ImportSummary> {
  const started = Date.now();
  const file = path.resolve(opts.file);
  const dryRun = opts.dryRun ?? false;
  const checkpointPath = path.resolve(opts.checkpointPath ?? defaultCheckpointPath(file));
  const rejectsPath = path.resolve(opts.rejectsPath ?? defaultRejectsPath(file));
  const batchBytes = opts.batchBytes ?? DEFAULT_BATCH_BYTES;
  const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  if (batchBytes > MAX_BATCH_BYTES || batchBytes < maxEventBytes)
    throw new ImportUsageError(
      `--batch-bytes must be between the per-event limit (${maxEventBytes}) and ${MAX_BATCH_BYTES}`,
    );

  const info = await inspectInput(file).catch((e: Error) => {
    throw new ImportUsageError(`cannot read ${opts.file}: ${e.message}`);
  });
  if (info.layout === 'csv' && opts.format !== 'posthog')
    throw new ImportUsageError(
      `CSV input is read as PostHog-shaped columns; --format ${opts.format} takes JSON exports`,
    );
  const isCsv = info.layout === 'csv';

  // Where to start.
  let from: RecordPosition | undefined;
  let csvHeader: CsvHeader | null = null;
  let previous: Checkpoint | null = null;
  if (opts.resume && !dryRun) {
    previous = readCheckpoint(checkpointPath);
    if (!previous) throw new ImportUsageError(`no checkpoint at ${checkpointPath}: run without --resume`);
    if (previous.size !== info.sizeBytes || previous.mtime_ms !== info.mtimeMs)
      throw new ImportUsageError(
        `${opts.file} changed since the checkpoint was written: run without --resume`,
      );
    if (previous.project !== projectFingerprint(opts.apiKey))
      throw new ImportUsageError('the checkpoint was written for another project api key');
    if (previous.format !== opts.format)
      throw new ImportUsageError(`the checkpoint was written with --format ${previous.format}`);
    from = previous.position;
    csvHeader = previous.csv_header;
  }
  if (previous?.done) {
    return {
      ...emptySummary(opts, rejectsPath, checkpointPath),
      resumed_from_line: previous.position.line,
      seconds: 0,
    };
  }
  const rejects = openRejectsFile(rejectsPath, from ? from.seq : null);
  const headerRecords = isCsv ? 1 : 0;

  const progress = (opts.progress ?? ((t, s) => createImportProgress({ totalBytes: t, startBytes: s })))(
    info.sizeBytes,
    info.gzip ? 0 : (from?.offset ?? 0),
  );
  let rawBytes = 0;
  let read = 0;
  let sent = 0;
  let accepted = 0;
  let rejected = 0;
  let readerPos: RecordPosition = from ?? { seq: 0, line: 1, offset: 0 };

  const checkpointAt = (done: boolean): Checkpoint => {
    const pos = lanes.watermark(readerPos);
    const readBefore = Math.max(0, pos.seq - headerRecords);
    const rejectedBefore = countBelow(rejects.seqs, pos.seq);
    return {
      version: 1,
      file,
      size: info.sizeBytes,
      mtime_ms: info.mtimeMs,
      format: opts.format,
      project: projectFingerprint(opts.apiKey),
      position: pos,
      csv_header: csvHeader,
      counts: { read: readBefore, sent: readBefore - rejectedBefore, rejected: rejectedBefore },
      done,
      updated_at: new Date().toISOString(),
    };
  };

  const client = createCaptureClient({
    url: opts.url,
    token: opts.apiKey,
    maxAttempts: opts.maxAttempts,
    signal: opts.signal,
    onRetry: ({ attempt, waitMs, error }) =>
      progress.log(`capture: ${error}; retry ${attempt} in ${(waitMs / 1000).toFixed(1)} s`),
  });
  const lanes = createSendLanes({
    lanes: opts.concurrency ?? 4,
    batchBytes,
    send: (items) => {
      sent += items.length;
      return client.send(items);
    },
    onAcked: (_batch, result) => {
      accepted += result.accepted;
      for (const { item, reason } of result.refused) {
        rejected++;
        rejects.add({ line: item.line, record: item.seq, reason, text: item.json });
      }
      writeCheckpoint(checkpointPath, checkpointAt(false));
    },
  });

  const reject = (pos: RecordPosition, reason: string, text: string) => {
    rejected++;
    rejects.add({ line: pos.line, record: pos.seq, reason, text });
  };

  const nowMs = Date.now();
  let failure: unknown = null;
  let completed = false;
  try {
    for await (const rec of readRecords({
      file,
      info,
      maxRecordBytes: Math.max(4 * maxEventBytes, 1024 * 1024),
      from,
      signal: opts.signal,
      onRawBytes: (b) => (rawBytes = b),
    })) {
      if (opts.signal?.aborted) break;
      readerPos = rec;
      if (isCsv && csvHeader === null) {
        const header = parseCsvHeader(rec.text);
        if (typeof header === 'string') throw new ImportUsageError(`line ${rec.line}: ${header}`);
        csvHeader = header;
        continue;
      }
      read++;
      if (rec.oversizedBytes !== undefined) {
        reject(
          rec,
          `record is over ${rec.oversizedBytes} bytes, more than the per-event limit of ${maxEventBytes}`,
          '',
        );
      } else {
        let value: unknown;
        let parseError: string | null = null;
        if (isCsv) {
          const r = csvToEvent(csvHeader!, rec.text);
          if (typeof r === 'string') parseError = `CSV: ${r}`;
          else value = r;
        } else {
          try {
            value = JSON.parse(rec.text);
          } catch (e) {
            parseError = `not valid JSON: ${(e as Error).message}`;
          }
        }
        const converted = parseError
          ? ({ ok: false, reason: parseError } as const)
          : convertRecord(value, rec.text, { format: opts.format, token: opts.apiKey, nowMs, maxEventBytes });
        if (!converted.ok) reject(rec, converted.reason, rec.text);
        else if (!dryRun) {
          const item: BatchItem = { seq: rec.seq, line: rec.line, json: converted.json };
          await lanes.add(item, rec, converted.distinctId);
        }
      }
      if ((read & 255) === 0) progress.update(rawBytes, read);
    }
    if (opts.signal?.aborted) {
      await lanes.drain();
    } else {
      if (!dryRun) await lanes.flush();
      completed = true;
    }
  } catch (e) {
    failure = e;
    await lanes.drain();
  } finally {
    progress.update(rawBytes, read);
    progress.stop();
    rejects.close();
  }
  if (!dryRun) writeCheckpoint(checkpointPath, checkpointAt(completed));
  if (failure instanceof ImportUsageError) throw failure;

  const seconds = (Date.now() - started) / 1000;
  const aborted = opts.signal?.aborted && !(failure instanceof ImportAbortedError);
  return {
    status: completed ? 'completed' : aborted ? 'interrupted' : 'failed',
    file: opts.file,
    format: opts.format,
    dry_run: dryRun,
    read,
    sent: dryRun ? 0 : sent,
    accepted: dryRun ? 0 : accepted,
    rejected,
    rejects_file: rejects.seqs.length > 0 ? rejectsPath : null,
    checkpoint: dryRun ? null : checkpointPath,
    resumed_from_line: from ? from.line : null,
    seconds: Math.round(seconds * 100) / 100,
    events_per_second: Math.round((dryRun ? read - rejected : accepted) / Math.max(seconds, 0.001)),
    ...(failure && !aborted ? { error: (failure as Error).message } : {}),
  };
}

function emptySummary(opts: ImportOptions, rejectsPath: string, checkpointPath: string): ImportSummary {
  return {
    status: 'completed',
    file: opts.file,
    format: opts.format,
    dry_run: false,
    read: 0,
    sent: 0,
    accepted: 0,
    rejected: 0,
    rejects_file: fs.existsSync(rejectsPath) ? rejectsPath : null,
    checkpoint: checkpointPath,
    resumed_from_line: null,
    seconds: 0,
    events_per_second: 0,
  };
}
