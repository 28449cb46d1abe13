// The console's logic that needs no page: formatting, the history behind
// the sparklines, the API's paths and bodies. Unit-tested (test/).

/** A duration as protobuf's JSON mapping writes it ("1.5s") in ms. */
export function durationMs(d: string | undefined): number {
  if (!d) return 0;
  const m = /^(-?\d+(?:\.\d+)?)s$/.exec(d);
  return m ? Math.round(parseFloat(m[1]) * 1000) : 0;
}

/** A short, readable age: 0s, 45s, 3m 20s, 2h 5m, 3d 4h. */
export function formatAge(ms: number): string {
  if (!(ms > 0)) return "0s";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/**
 * How far an instant (RFC 3339, as protobuf's JSON mapping writes a
 * Timestamp) is from now: "in 9m 58s", "now", "12s ago"; "" when unset or
 * unreadable.
 */
export function relativeTime(at: string | undefined, now: number): string {
  const t = at ? Date.parse(at) : NaN;
  if (Number.isNaN(t)) return "";
  const d = t - now;
  if (Math.abs(d) < 1000) return "now";
  return d > 0 ? `in ${formatAge(d)}` : `${formatAge(-d)} ago`;
}

/** A count with thousands separated, as int64 fields come (strings). */
export function formatCount(v: string | number | undefined): string {
  const n = typeof v === "string" ? Number(v) : (v ?? 0);
  return Number.isFinite(n) ? n.toLocaleString("en-US") : String(v);
}

/** The metrics a consumer's sparklines show. */
export const METRICS = ["pending", "ackPending", "redelivered", "waiting", "oldestMs"] as const;
export type Metric = (typeof METRICS)[number];
export type Sample = { at: number } & Record<Metric, number>;

export const METRIC_LABELS: Record<Metric, string> = {
  pending: "Pending",
  ackPending: "Ack pending",
  redelivered: "Redelivered",
  waiting: "Waiting",
  oldestMs: "Oldest unacked",
};

/**
 * History keeps each consumer's samples over a window (the last minutes),
 * fed by the page's own polling of the API: the console asks the server
 * nothing for it.
 */
export class History {
  private series = new Map<string, Sample[]>();
  constructor(readonly windowMs = 10 * 60_000, readonly max = 600) {}

  add(key: string, s: Sample): void {
    const list = this.series.get(key) ?? [];
    const last = list[list.length - 1];
    if (last && s.at <= last.at) return; // an answer older than one we have
    list.push(s);
    const from = s.at - this.windowMs;
    while (list.length > this.max || (list.length > 0 && list[0].at < from)) list.shift();
    this.series.set(key, list);
  }

  get(key: string): Sample[] {
    return this.series.get(key) ?? [];
  }
}

/** A consumer summary or GetConsumer answer as a sample. */
export function sampleOf(at: number, c: {
  numPending?: string; numAckPending?: string; numRedelivered?: string; numWaiting?: string; oldestUnackedAge?: string;
}): Sample {
  return {
    at,
    pending: Number(c.numPending ?? 0),
    ackPending: Number(c.numAckPending ?? 0),
    redelivered: Number(c.numRedelivered ?? 0),
    waiting: Number(c.numWaiting ?? 0),
    oldestMs: durationMs(c.oldestUnackedAge),
  };
}

/**
 * The points of a sparkline of values in a width × height box: time runs
 * left to right over the window ending at now; the highest value touches
 * the top, zero the bottom.
 */
export function sparkPoints(samples: Sample[], metric: Metric, now: number, windowMs: number, width: number, height: number): string {
  if (samples.length === 0) return "";
  if (samples.length === 1) samples = [{ ...samples[0], at: samples[0].at - windowMs / 60 }, samples[0]]; // a dash, not nothing
  const top = Math.max(1, ...samples.map((s) => s[metric]));
  const pad = 1;
  return samples
    .map((s) => {
      const x = width - ((now - s.at) / windowMs) * width;
      const y = height - pad - (s[metric] / top) * (height - 2 * pad);
      return `${round(Math.max(0, Math.min(width, x)))},${round(y)}`;
    })
    .join(" ");
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

/** The REST paths of the API the console calls. */
export const paths = {
  streams: () => "/v1/streams",
  consumers: (stream: string) => `/v1/streams/${enc(stream)}/consumers`,
  consumer: (stream: string, consumer: string) => `/v1/streams/${enc(stream)}/consumers/${enc(consumer)}`,
  leases: (stream: string, consumer: string) => `${paths.consumer(stream, consumer)}/leases`,
  deadLetters: (stream: string, consumer: string, pageToken = "", pageSize = 20) => {
    const q = new URLSearchParams({ pageSize: String(pageSize) });
    if (pageToken) q.set("pageToken", pageToken);
    return `${paths.consumer(stream, consumer)}/deadLetters?${q}`;
  },
  action: (stream: string, consumer: string, verb: "pause" | "resume" | "unpin" | "redrive" | "seek") =>
    `${paths.consumer(stream, consumer)}:${verb}`,
};

function enc(s: string): string {
  return encodeURIComponent(s);
}

/** The body of a Redrive: the sequences selected, or none for all. */
export function redriveBody(stream: string, consumer: string, seqs: Iterable<string>): { stream: string; consumer: string; seqs: string[] } {
  return { stream, consumer, seqs: [...seqs].sort((a, b) => Number(a) - Number(b)) };
}

/** A local datetime-local input's value as an RFC 3339 instant. */
export function pauseUntil(local: string, now: Date): string | Error {
  const t = new Date(local);
  if (!local || Number.isNaN(t.getTime())) return new Error("Give a date and time to pause until.");
  if (t.getTime() <= now.getTime()) return new Error("The pause must end in the future.");
  return t.toISOString();
}

/** The value of a datetime-local input for an instant, in local time. */
export function localInput(t: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())}T${p(t.getHours())}:${p(t.getMinutes())}`;
}

/**
 * A preview of a dead letter's data (base64, as protobuf's JSON mapping
 * writes bytes): the text when it is UTF-8 without control characters,
 * else hex.
 */
export function preview(b64: string | undefined, size: number): { text: string; binary: boolean } {
  if (!b64) return { text: "", binary: false };
  const bin = atob(b64);
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  const more = size > bytes.length ? ` … (${size} bytes)` : "";
  try {
    // The gateway cuts a preview at a byte count: a character it split at
    // the end is left out, not taken for bytes that are not text.
    const text = new TextDecoder("utf-8", { fatal: true }).decode(more ? whole(bytes) : bytes);
    // eslint-disable-next-line no-control-regex
    if (!/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) return { text: text + more, binary: false };
  } catch {
    // not UTF-8: hex below
  }
  const hex = [...bytes.slice(0, 256)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
  return { text: hex + (bytes.length > 256 || more ? ` … (${size} bytes)` : ""), binary: true };
}

/** whole is bytes less the start of a UTF-8 character they end in the middle of. */
function whole(bytes: Uint8Array): Uint8Array {
  let i = bytes.length - 1;
  for (let k = 0; i >= 0 && k < 3 && (bytes[i] & 0xc0) === 0x80; k++) i--;
  if (i < 0) return bytes;
  const lead = bytes[i];
  const want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return want > bytes.length - i ? bytes.subarray(0, i) : bytes;
}

/** What an API error says, from the JSON grpc-gateway writes. */
export function errorText(status: number, body: unknown): string {
  const b = body as { message?: string; details?: { reason?: string }[] } | null;
  const reason = b?.details?.find((d) => d.reason)?.reason;
  const msg = b?.message || `HTTP ${status}`;
  return reason ? `${msg} (${reason})` : msg;
}

/** The name shown for a principal: none when auth is off. */
export function principalName(p: string | undefined): string {
  return p ? p : "(anonymous: authentication is off)";
}

/** The metadata key that names the principal that created a consumer through the API. */
export const CREATED_BY = "jetgate.created_by";

/** Who created a consumer, as its page says it, from its configuration's metadata. */
export function createdByText(metadata: Record<string, string> | undefined): string {
  const by = metadata?.[CREATED_BY];
  return by === undefined
    ? "Not created through jetgate's API: configured in jetgate's file, or made by another NATS client."
    : `Created through jetgate's API by ${principalName(by)}.`;
}

/** The configuration fields worth showing: those set (protobuf's JSON mapping writes every field). */
export function configEntries(config: Record<string, unknown>): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(config)) {
    if (v === null || v === undefined || v === "" || (Array.isArray(v) && v.length === 0) || /_UNSPECIFIED$/.test(String(v))) continue;
    out.push([k, Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v)]);
  }
  return out;
}

/**
 * The bidirectional controls (embeddings, overrides, isolates and marks):
 * in a name they can make it read as another ("evil\u202Etxt.exe" shows as
 * "evilexe.txt"), so the console shows each as its escape instead.
 */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** A piece of text as shown: as it is, or one bidirectional control escaped ("\u202E"). */
export type TextRun = { text: string; escaped: boolean };

/** A bidirectional control as the console writes it: \u202E. */
function escapeOne(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
}

/** Splits text into runs as it is and escaped bidirectional controls, in order; none for the empty text. */
export function bidiRuns(s: string): TextRun[] {
  const out: TextRun[] = [];
  let from = 0;
  for (const m of s.matchAll(BIDI)) {
    const at = m.index ?? 0;
    if (at > from) out.push({ text: s.slice(from, at), escaped: false });
    out.push({ text: escapeOne(m[0]), escaped: true });
    from = at + m[0].length;
  }
  if (from < s.length) out.push({ text: s.slice(from), escaped: false });
  return out;
}

/** The text with every bidirectional control escaped, for places that take plain text (the window's title). */
export function escapeBidi(s: string): string {
  return s.replace(BIDI, escapeOne);
}

const STATUS_NAMES: Record<number, string> = {
  400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
  412: "Precondition Failed", 429: "Too Many Requests", 499: "Client Closed Request", 500: "Internal Server Error",
  501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
};

/** What a failed call says: its HTTP status and the gateway's message (errorText). */
export function failureText(status: number, message: string): string {
  const head = `HTTP ${status}${STATUS_NAMES[status] ? ` ${STATUS_NAMES[status]}` : ""}`;
  return !message || message === `HTTP ${status}` ? head : `${head}: ${message}`;
}
