// The checkpoint of an import (written after each acknowledged batch, atomically: a temporary
// file renamed over the old one, so a kill at any moment leaves the previous or the new one)
// and the rejects file (JSON lines: line, record, reason, the start of the record's text).
// A checkpoint names the first record not yet known to be acknowledged; everything before it
// was acknowledged by capture or rejected. It is tied to the file (size, mtime) and project.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { RecordPosition } from './record-reader';

export type Checkpoint = {
  version: 1;
  file: string;
  size: number;
  mtime_ms: number;
  format: string;
  /** sha256 of the project api key (never the key itself). */
  project: string;
  position: RecordPosition;
  csv_header: string[] | null;
  counts: { read: number; sent: number; rejected: number };
  done: boolean;
  updated_at: string;
};

export const projectFingerprint = (token: string) =>
  crypto.createHash('sha256').update(token).digest('hex').slice(0, 16);

export function defaultCheckpointPath(file: string): string {
  return `${file}.sett-import.json`;
}

export function defaultRejectsPath(file: string): string {
  return `${file}.rejects.jsonl`;
}

export function writeCheckpoint(file: string, cp: Checkpoint): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, `${JSON.stringify(cp, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

export function readCheckpoint(file: string): Checkpoint | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  const cp = JSON.parse(text) as Checkpoint;
  if (cp.version !== 1 || typeof cp.position?.seq !== 'number')
    throw new Error(`${file} is not a sett import checkpoint`);
  return cp;
}

export type Reject = { line: number; record: number; reason: string; text: string };

export type RejectsFile = {
  add(r: Reject): void;
  /** Records (seq) rejected so far, sorted (the file exists when there is one). */
  seqs: number[];
  close(): void;
};

const TEXT_KEPT = 1000;

/**
 * Opens the rejects file. On resume, the rejects of records at or after the checkpoint are
 * dropped (those records are read again and rejected again); earlier ones are kept. The file is
 * only written when there is a reject to write: a clean run leaves none behind, and a stale one
 * from an earlier run of the same file is removed rather than left to mislead.
 */
export function openRejectsFile(file: string, keepBefore: number | null): RejectsFile {
  const seqs: number[] = [];
  let kept: string[] = [];
  if (keepBefore !== null && fs.existsSync(file)) {
    kept = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => {
        if (!l) return false;
        try {
          const r = JSON.parse(l) as Reject;
          if (r.record < keepBefore) {
            seqs.push(r.record);
            return true;
          }
        } catch {
          // a torn last line from a kill: drop it
        }
        return false;
      });
    seqs.sort((a, b) => a - b);
  }
  if (kept.length > 0) fs.writeFileSync(file, kept.map((l) => `${l}\n`).join(''));
  else fs.rmSync(file, { force: true });
  let fd: number | null = kept.length > 0 ? fs.openSync(file, 'a') : null;
  return {
    seqs,
    add(r) {
      fd ??= fs.openSync(file, 'a');
      const text = r.text.length > TEXT_KEPT ? `${r.text.slice(0, TEXT_KEPT)}…` : r.text;
      fs.writeSync(fd, `${JSON.stringify({ line: r.line, record: r.record, reason: r.reason, text })}\n`);
      // Usually in order; refusals by capture can come after later records were read.
      let i = seqs.length;
      while (i > 0 && seqs[i - 1]! > r.record) i--;
      seqs.splice(i, 0, r.record);
    },
    close() {
      if (fd !== null) fs.closeSync(fd);
      fd = null;
    },
  };
}

/** How many of the sorted seqs are below `seq`. */
export function countBelow(sorted: number[], seq: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
