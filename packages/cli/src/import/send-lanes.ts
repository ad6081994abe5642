// Several requests in flight with each person's events still in file order: events are
// partitioned by distinct_id into lanes, each lane fills one batch (by bytes) while at most one
// of its batches is in flight, and a lane's next batch goes out only after the previous one was
// acknowledged. The reader waits when the lane it needs is busy (bounded memory).
// `watermark` is where a checkpoint may point: every record before it is acknowledged or rejected.
import type { BatchItem, BatchResult } from './capture-client';
import type { RecordPosition } from './record-reader';

export type Batch = { items: BatchItem[]; bytes: number; first: RecordPosition };

type Lane = {
  building: Batch | null;
  inflight: Promise<void> | null;
  inflightFirst: RecordPosition | null;
};

export type SendLanesOptions = {
  lanes: number;
  batchBytes: number;
  send(items: BatchItem[]): Promise<BatchResult>;
  /** Called once per acknowledged batch, before the lane takes its next batch. */
  onAcked(batch: Batch, result: BatchResult): void;
};

export type SendLanes = {
  add(item: BatchItem, pos: RecordPosition, distinctId: string): Promise<void>;
  /** Sends every partly filled batch and waits for all answers. */
  flush(): Promise<void>;
  /** Waits for the batches in flight only (an interrupted run). */
  drain(): Promise<void>;
  /** The earliest record not yet acknowledged, or `next` when every added record was. */
  watermark(next: RecordPosition): RecordPosition;
  inFlight(): number;
};

/** FNV-1a: a stable, cheap lane for a distinct id. */
function laneOf(distinctId: string, lanes: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < distinctId.length; i++) {
    h ^= distinctId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % lanes;
}

export function createSendLanes(opts: SendLanesOptions): SendLanes {
  const lanes: Lane[] = Array.from({ length: opts.lanes }, () => ({
    building: null,
    inflight: null,
    inflightFirst: null,
  }));
  let failure: unknown = null;
  /** First records of batches that failed (the run stops): the watermark must stay before them. */
  const failed: RecordPosition[] = [];

  const dispatch = async (lane: Lane) => {
    // A loop: another dispatch of this lane may have started a batch while this one waited.
    while (lane.inflight) await lane.inflight;
    if (failure) throw failure;
    const batch = lane.building;
    if (!batch) return;
    lane.building = null;
    lane.inflightFirst = batch.first;
    lane.inflight = opts
      .send(batch.items)
      .then(
        (result) => {
          // Before onAcked, so a checkpoint written there already counts this batch as done.
          lane.inflightFirst = null;
          opts.onAcked(batch, result);
        },
        (error: unknown) => {
          failure ??= error;
          failed.push(batch.first);
        },
      )
      .finally(() => {
        lane.inflight = null;
        lane.inflightFirst = null;
      });
  };

  return {
    async add(item, pos, distinctId) {
      if (failure) throw failure;
      const lane = lanes[laneOf(distinctId, lanes.length)]!;
      const size = item.json.length + 1;
      if (lane.building && lane.building.bytes + size > opts.batchBytes) {
        const first = lane.building.first.seq;
        await dispatch(lane);
        // Keep idle lanes in step: a lane whose partial batch is older than the one just sent
        // sends it now, so a rarely used lane cannot hold the checkpoint back for long.
        for (const other of lanes)
          if (other !== lane && !other.inflight && other.building && other.building.first.seq < first)
            void dispatch(other).catch(() => undefined);
      }
      if (!lane.building) lane.building = { items: [], bytes: 0, first: pos };
      lane.building.items.push(item);
      lane.building.bytes += size;
    },
    async flush() {
      await Promise.all(lanes.map((l) => dispatch(l)));
      await Promise.all(lanes.map((l) => l.inflight));
      if (failure) throw failure;
    },
    async drain() {
      await Promise.all(lanes.map((l) => l.inflight));
    },
    watermark(next) {
      let min = next;
      for (const f of failed) if (f.seq < min.seq) min = f;
      for (const l of lanes) {
        if (l.inflightFirst && l.inflightFirst.seq < min.seq) min = l.inflightFirst;
        if (l.building && l.building.first.seq < min.seq) min = l.building.first;
      }
      return min;
    },
    inFlight: () => lanes.filter((l) => l.inflight).length,
  };
}
