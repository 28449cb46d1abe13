// "Replay from…": what the form asks the server for (a Seek to a time or a
// sequence), and how many messages that delivers again, as far as the
// console can know before it asks. Unit-tested (test/).
//
// What the console can know: the stream's first and last sequence and how
// many messages it holds (ListStreams), and the consumer's filter, ack
// floor, last delivery and oldest unacknowledged message (GetConsumer). It
// cannot count the messages of one subject, nor look up when a message was
// stored. So a count is a range:
// - from a sequence N, the stream's sequences N..last: exact when the
//   stream has no gaps (messages = last - first + 1) and the consumer's
//   filter takes every subject of the stream; else at most that many.
// - from a time T, the first sequence stored at or after T is known only
//   between bounds that the consumer's positions give (a message delivered
//   or acknowledged at a time was stored before it; the oldest unacknowledged
//   message was stored when its age says), so the count is between the
//   counts from those bounds, and "about" the count from a sequence
//   interpolated between them (as if messages were stored at an even rate
//   between the two facts). Without a fact from before T, only "at most".
// The Seek's answer then says exactly where the consumer starts, and its
// state how many messages wait for it.
import type { GetConsumer, StreamSummary } from "./api";
import { durationMs } from "./logic";

/** The facts a count is made from. Times are ms since the epoch. */
export type ReplayFacts = {
  stream: { firstSeq: number; lastSeq: number; messages: number; subjects: string[] };
  /** The consumer's filter subjects; none is the whole stream. */
  filters: string[];
  /** The last delivery: its stream sequence and when, if known. */
  delivered?: { seq: number; at?: number };
  /** The ack floor: every message up to seq acknowledged, the last at `at`. */
  ackFloor?: { seq: number; at?: number };
  /** When the first unacknowledged message past the ack floor was stored (now - oldest unacked age), if any. */
  oldestUnackedAt?: number;
};

/** How many messages a replay delivers: between min and max, about estimate when one can be made. */
export type ReplayCount = { min: number; max: number; estimate?: number; from: number; to: number };

/** Whether a filter subject takes every message of a stream subject (NATS wildcards * and >). */
export function covers(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return i < s.length;
    if (i >= s.length) return false;
    if (f[i] === "*" ? s[i] === ">" : f[i] !== s[i]) return false;
  }
  return f.length === s.length;
}

/** Whether the consumer's filter takes every message of the stream. */
export function takesAll(facts: ReplayFacts): boolean {
  return facts.filters.length === 0 || facts.stream.subjects.every((s) => facts.filters.some((f) => covers(f, s)));
}

/** How many messages a replay from stream sequence n delivers. */
export function countFromSequence(n: number, facts: ReplayFacts): ReplayCount {
  const { firstSeq, lastSeq, messages } = facts.stream;
  const from = Math.max(n, firstSeq, 1);
  if (from > lastSeq || messages === 0) return { min: 0, max: 0, from, to: lastSeq };
  const seqs = lastSeq - from + 1;
  const missing = Math.max(0, lastSeq - firstSeq + 1 - messages); // deleted sequences, somewhere
  const max = Math.min(seqs, messages);
  const min = takesAll(facts) ? Math.max(0, seqs - missing) : 0;
  return { min, max, from, to: lastSeq };
}

/** How many messages a replay from time t delivers (t at or before now; both ms since the epoch). */
export function countFromTime(t: number, facts: ReplayFacts, now: number): ReplayCount {
  const { firstSeq, lastSeq } = facts.stream;
  // The first sequence stored at or after t lies in lo..hi.
  let lo = Math.max(firstSeq, 1);
  let hi = lastSeq + 1;
  let below: { seq: number; at: number } | undefined; // the latest fact of a message stored before t
  let above: { seq: number; at: number } | undefined; // the earliest of one stored at or after t
  const before = (seq: number, at: number) => { // messages up to seq were stored at or before `at`, and at < t
    if (seq + 1 > lo) {
      lo = seq + 1;
      below = { seq, at };
    }
  };
  for (const p of [facts.delivered, facts.ackFloor]) {
    if (p && p.seq > 0 && p.at !== undefined && p.at < t) before(p.seq, p.at);
  }
  const u = facts.oldestUnackedAt;
  if (u !== undefined && facts.ackFloor) {
    const a = facts.ackFloor.seq;
    if (u < t) before(a + 1, u); // it and those before it were stored before t (its own sequence is a + 1 or later)
    else if (takesAll(facts) && a + 1 < hi) { // unfiltered, it is a + 1 (or the first after a gap): everything from there is at or after t
      hi = a + 1;
      above = { seq: a + 1, at: u };
    }
  }
  hi = Math.max(lo, hi);
  const most = countFromSequence(lo, facts);
  const least = countFromSequence(hi, facts);
  const out: ReplayCount = { min: least.min, max: most.max, from: lo, to: lastSeq };
  if (below && out.min < out.max) {
    // Interpolated between the fact before t and the one after it (or the
    // end of the stream: its last message was stored by now at the latest).
    const end = above ?? { seq: lastSeq + 1, at: Math.max(t, now) };
    const span = end.at - below.at;
    const at = span > 0 ? below.seq + 1 + ((t - below.at) / span) * (end.seq - below.seq - 1) : lo;
    const seq = Math.min(hi, Math.max(lo, Math.round(at)));
    out.estimate = Math.min(out.max, Math.max(out.min, countFromSequence(seq, facts).max));
  }
  return out;
}

/** A count as the confirmation says it: "4 messages", "about 40 messages (20 to 70)", "at most 9 messages". */
export function countText(c: ReplayCount): string {
  const n = (v: number) => `${v.toLocaleString("en-US")} message${v === 1 ? "" : "s"}`;
  if (c.min === c.max) return n(c.max);
  if (c.estimate !== undefined) return `about ${n(c.estimate)} (${c.min.toLocaleString("en-US")} to ${c.max.toLocaleString("en-US")})`;
  if (c.min === 0) return `at most ${n(c.max)}`;
  return `${c.min.toLocaleString("en-US")} to ${n(c.max)}`;
}

/** What the form asks for: a Seek body, or why it cannot. */
export type ReplayTarget = { sequence: string } | { time: string };

/**
 * The Seek body for the form's choice: a time (a datetime-local value, in
 * local time, not in the future) or a stream sequence (a whole number, 1 or
 * more); an Error that says what to fix otherwise.
 */
export function replayTarget(kind: string, time: string, sequence: string, now: Date): ReplayTarget | Error {
  if (kind === "sequence") {
    const s = sequence.trim();
    if (!/^[1-9]\d*$/.test(s) || !Number.isSafeInteger(Number(s))) return new Error("Give a stream sequence: a whole number, 1 or more.");
    return { sequence: s };
  }
  if (kind !== "time") return new Error("Choose a time or a sequence to replay from.");
  const t = new Date(time);
  if (!time || Number.isNaN(t.getTime())) return new Error("Give a date and time to replay from.");
  if (t.getTime() > now.getTime()) return new Error("The time must not be in the future: nothing was stored then yet.");
  return { time: t.toISOString() };
}

/** The facts of a count from the API's answers (protobuf's JSON: int64 as strings, durations as "1.5s"). */
export function replayFacts(stream: StreamSummary, info: GetConsumer, now: number): ReplayFacts {
  const seq = (v: string | undefined) => Number(v ?? 0);
  const at = (v: string | undefined) => (v ? Date.parse(v) : undefined);
  const st = info.state ?? {};
  const age = durationMs(info.oldestUnackedAge);
  return {
    stream: { firstSeq: seq(stream.firstSeq), lastSeq: seq(stream.lastSeq), messages: seq(stream.messages), subjects: stream.subjects ?? [] },
    filters: info.config?.filterSubjects ?? [],
    delivered: { seq: seq(st.delivered?.streamSeq), at: at(st.delivered?.lastActive) },
    ackFloor: { seq: seq(st.ackFloor?.streamSeq), at: at(st.ackFloor?.lastActive) },
    oldestUnackedAt: age > 0 ? now - age : undefined,
  };
}

/** What the confirmation says of a count: how many, from which sequences, and what the console cannot tell. */
export function replayText(c: ReplayCount, facts: ReplayFacts, bySequence: boolean): string {
  if (c.max === 0) return "none so far: no message is stored from there on, so only messages stored from now on are delivered";
  let text = countText(c);
  if (bySequence) text += c.from === c.to ? ` (stream sequence ${c.from})` : ` (stream sequences ${c.from} to ${c.to})`;
  if (!takesAll(facts)) text += `, of which only those on ${facts.filters.join(", ")} are delivered (the console cannot count those)`;
  return text;
}
