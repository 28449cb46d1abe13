// What Client.seek, createConsumer and updateConsumer send: a seek target,
// a consumer configuration in the library's own shape (numbers, ms, Dates)
// as the API's message, and an update mask as the API's field names.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConsumerConfigSchema, SeekRequestSchema } from "./gen/jetgate/v1/consumer_pb.js";
import type { ConsumerConfig } from "./info.js";

/** Where Client.seek moves a consumer to: exactly one of these. */
export type SeekTarget =
  /** The first stream sequence delivered next (1 or more). */
  | { sequence: number }
  /** The first message stored at or after this time (not in the future). */
  | { time: Date }
  /** Everything not acknowledged is delivered again, now. */
  | { ackFloor: true };

/**
 * A consumer's configuration for Client.createConsumer (durableName is its
 * name) and updateConsumer: ConsumerConfig's fields, any left out;
 * durations in ms, times as Dates, counts as numbers.
 */
export type ConsumerConfigInput = Partial<ConsumerConfig>;

type PbConfig = MessageInitShape<typeof ConsumerConfigSchema>;

// How each field of the library's ConsumerConfig becomes the API's.
const int64 = (v: unknown): bigint => BigInt(integer(v));
const same = (v: unknown): unknown => v;
const convert: Record<keyof ConsumerConfig, (v: unknown) => unknown> = {
  durableName: same,
  deliverPolicy: same,
  optStartSeq: int64,
  optStartTime: (v) => timestampFromDate(aDate(v)),
  ackPolicy: same,
  ackWait: (v) => durationFromMs(finite(v)),
  maxDeliver: int64,
  backoff: (v) => (v as unknown[]).map((d) => durationFromMs(finite(d))),
  filterSubjects: (v) => [...(v as string[])],
  maxWaiting: int64,
  maxAckPending: int64,
  maxRequestBatch: int64,
  maxRequestExpires: (v) => durationFromMs(finite(v)),
  maxRequestMaxBytes: int64,
  numReplicas: integer,
  description: same,
  priorityGroups: (v) => [...(v as string[])],
  priorityPolicy: same,
  priorityTimeout: (v) => durationFromMs(finite(v)),
  pauseUntil: (v) => timestampFromDate(aDate(v)),
  metadata: (v) => ({ ...(v as Record<string, string>) }),
  inactiveThreshold: (v) => durationFromMs(finite(v)),
};

function finite(v: unknown): number {
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new RangeError(`${String(v)} is not a finite number of ms`);
  }
  return v;
}

function integer(v: unknown): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) {
    throw new RangeError(`${String(v)} is not an integer`);
  }
  return v;
}

function aDate(v: unknown): Date {
  if (!(v instanceof Date) || Number.isNaN(v.getTime())) {
    throw new RangeError(`${String(v)} is not a Date`);
  }
  return v;
}

/** @internal The API's ConsumerConfig for the fields given; a RangeError for a field it has not or a value that does not fit. */
export function configPb(config: ConsumerConfigInput): PbConfig {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    const to = (convert as Record<string, (v: unknown) => unknown>)[k];
    if (!Object.hasOwn(convert, k) || to === undefined) {
      throw new RangeError(`config: ${k} is not a field of ConsumerConfig (fields: ${Object.keys(convert).join(", ")})`);
    }
    if (v === undefined) {
      continue;
    }
    try {
      out[k] = to(v);
    } catch (e) {
      throw new RangeError(`config: ${k}: ${(e as Error).message}`);
    }
  }
  return out as PbConfig;
}

/**
 * @internal The API's field names (snake_case) for an update mask: an array,
 * or one string separated by commas, of ConsumerConfig's fields in either
 * case ("ackWait,maxDeliver" or ["ack_wait"]).
 */
export function maskPaths(mask: string | string[]): string[] {
  const names = (typeof mask === "string" ? mask.split(",") : mask).map((n) => n.trim()).filter((n) => n !== "");
  if (names.length === 0) {
    throw new RangeError("updateMask names no field: say which fields to change (e.g. [\"ackWait\"])");
  }
  return names.map((n) => {
    const camel = n.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    if (!Object.hasOwn(convert, camel)) {
      throw new RangeError(`updateMask: ${n} is not a field of ConsumerConfig`);
    }
    return camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  });
}

/** @internal The target of a SeekRequest; a RangeError unless exactly one is given. */
export function seekTargetPb(to: SeekTarget): MessageInitShape<typeof SeekRequestSchema>["target"] {
  const t = (to ?? {}) as { sequence?: number; time?: Date; ackFloor?: boolean };
  const given = (["sequence", "time", "ackFloor"] as const).filter((k) => t[k] !== undefined && t[k] !== false);
  if (given.length !== 1) {
    throw new RangeError(`seek takes exactly one of sequence, time or ackFloor: true${given.length ? `; it was given ${given.join(" and ")}` : ""}`);
  }
  if (t.sequence !== undefined) {
    if (!Number.isSafeInteger(t.sequence) || t.sequence < 1) {
      throw new RangeError(`seek: sequence is a stream sequence, 1 or more, not ${t.sequence}`);
    }
    return { case: "sequence", value: BigInt(t.sequence) };
  }
  if (t.time !== undefined) {
    return { case: "time", value: timestampFromDate(aDate(t.time)) };
  }
  if (t.ackFloor !== true) {
    throw new RangeError("seek: ackFloor is true when given");
  }
  return { case: "ackFloor", value: true };
}
