import { describe, expect, test } from "vitest";
import { createdByText } from "../src/logic";
import {
  countFromSequence, countFromTime, countText, covers, replayFacts, replayTarget, replayText, takesAll, type ReplayFacts,
} from "../src/replay";

// A stream of sequences 1 to 100, none deleted, on orders.>.
const facts = (more: Partial<ReplayFacts> = {}): ReplayFacts => ({
  stream: { firstSeq: 1, lastSeq: 100, messages: 100, subjects: ["orders.>"] },
  filters: [],
  ...more,
});

describe("filters", () => {
  test.each([
    [">", "orders.>", true], ["orders.>", "orders.>", true], ["orders.*", "orders.new", true], ["orders.*", "orders.>", false],
    ["orders.new", "orders.>", false], ["orders.new", "orders.new", true], ["orders.*.x", "orders.a.x", true],
    ["orders", "orders.new", false], ["orders.>", "orders", false], ["*.>", "a.b.c", true],
  ])("covers(%j, %j) = %s", (f, s, want) => expect(covers(f, s)).toBe(want));
  test("a consumer takes the whole stream with no filter, or filters that cover every subject", () => {
    expect(takesAll(facts())).toBe(true);
    expect(takesAll(facts({ filters: [">"] }))).toBe(true);
    expect(takesAll(facts({ filters: ["orders.new"] }))).toBe(false);
    expect(takesAll({ ...facts({ filters: ["a.>", "b.*"] }), stream: { firstSeq: 1, lastSeq: 1, messages: 1, subjects: ["a.x", "b.y"] } })).toBe(true);
  });
});

describe("a replay from a sequence", () => {
  test("delivers the stream's last sequence minus N plus one: exact without gaps or a narrowing filter", () => {
    expect(countFromSequence(97, facts())).toEqual({ min: 4, max: 4, from: 97, to: 100 });
    expect(countFromSequence(100, facts())).toMatchObject({ min: 1, max: 1 });
    expect(countText(countFromSequence(97, facts()))).toBe("4 messages");
    expect(countText(countFromSequence(100, facts()))).toBe("1 message");
  });
  test("from before the first message: the whole stream; past the last: none", () => {
    const s = { stream: { firstSeq: 51, lastSeq: 100, messages: 50, subjects: ["orders.>"] } };
    expect(countFromSequence(1, facts(s))).toEqual({ min: 50, max: 50, from: 51, to: 100 });
    expect(countFromSequence(101, facts())).toMatchObject({ min: 0, max: 0 });
    expect(countFromSequence(5, facts({ stream: { firstSeq: 0, lastSeq: 0, messages: 0, subjects: [] } }))).toMatchObject({ max: 0 });
  });
  test("deleted messages somewhere: a range", () => {
    const c = countFromSequence(91, facts({ stream: { firstSeq: 1, lastSeq: 100, messages: 95, subjects: ["orders.>"] } }));
    expect(c).toMatchObject({ min: 5, max: 10 });
    expect(countText(c)).toBe("5 to 10 messages");
  });
  test("a filter that takes part of the stream: at most, and said so", () => {
    const f = facts({ filters: ["orders.new"] });
    const c = countFromSequence(91, f);
    expect(c).toMatchObject({ min: 0, max: 10 });
    expect(replayText(c, f, true)).toBe("at most 10 messages (stream sequences 91 to 100), of which only those on orders.new are delivered (the console cannot count those)");
  });
  test("what the confirmation says", () => {
    expect(replayText(countFromSequence(97, facts()), facts(), true)).toBe("4 messages (stream sequences 97 to 100)");
    expect(replayText(countFromSequence(100, facts()), facts(), true)).toBe("1 message (stream sequence 100)");
    expect(replayText(countFromSequence(200, facts()), facts(), true)).toMatch(/^none so far/);
    expect(countText({ min: 1234, max: 1234, from: 1, to: 1 })).toBe("1,234 messages");
  });
});

describe("a replay from a time", () => {
  const now = Date.parse("2026-12-04T15:00:00Z");
  const at = (s: string) => Date.parse(`2026-12-04T${s}Z`);
  test("nothing known from before it: at most the whole stream", () => {
    const c = countFromTime(at("14:02:00"), facts(), now);
    expect(c).toEqual({ min: 0, max: 100, from: 1, to: 100 });
    expect(countText(c)).toBe("at most 100 messages");
  });
  test("a delivery before it bounds the count, and gives an estimate between it and now", () => {
    // Sequence 40 delivered at 14:00; the replay from 14:30: sequences 41 on at most; about half of them.
    const c = countFromTime(at("14:30:00"), facts({ delivered: { seq: 40, at: at("14:00:00") } }), now);
    expect(c).toMatchObject({ min: 0, max: 60, from: 41, estimate: 30 });
    expect(countText(c)).toBe("about 30 messages (0 to 60)");
  });
  test("the ack floor's last ack is a fact too; the later of the facts before it wins", () => {
    const c = countFromTime(at("14:30:00"), facts({ ackFloor: { seq: 20, at: at("14:10:00") }, delivered: { seq: 30, at: at("14:20:00") } }), now);
    expect(c).toMatchObject({ min: 0, max: 70, from: 31 });
    const later = countFromTime(at("14:15:00"), facts({ ackFloor: { seq: 20, at: at("14:10:00") }, delivered: { seq: 30, at: at("14:20:00") } }), now);
    expect(later).toMatchObject({ max: 80, from: 21 }); // the delivery at 14:20 is after 14:15: it says nothing
  });
  test("the oldest unacknowledged message, stored after the time: everything past the ack floor comes again", () => {
    // Acked up to 60; the first message after, 61, stored at 14:45; the replay from 14:30.
    const f = facts({ ackFloor: { seq: 60, at: at("14:50:00") }, oldestUnackedAt: at("14:45:00") });
    const c = countFromTime(at("14:30:00"), f, now);
    expect(c).toMatchObject({ min: 40, max: 100, from: 1 });
    expect(countText(c)).toBe("40 to 100 messages");
    // Filtered, 61 need not be the next message of the stream: only at most.
    expect(countFromTime(at("14:30:00"), { ...f, filters: ["orders.new"] }, now)).toMatchObject({ min: 0, max: 100 });
  });
  test("the oldest unacknowledged message, stored before the time: those up to it are not replayed", () => {
    const f = facts({ ackFloor: { seq: 60, at: at("14:50:00") }, oldestUnackedAt: at("14:20:00") });
    expect(countFromTime(at("14:30:00"), f, now)).toMatchObject({ max: 39, from: 62 });
  });
  test("bracketed on both sides: an estimate between the two facts", () => {
    // 40 delivered at 14:00 (stored by then); 61 on stored from 14:40: from 14:20, about half of 41..60.
    const f = facts({ delivered: { seq: 40, at: at("14:00:00") }, ackFloor: { seq: 60, at: at("14:50:00") }, oldestUnackedAt: at("14:40:00") });
    const c = countFromTime(at("14:20:00"), f, now);
    expect(c).toMatchObject({ min: 40, max: 60, from: 41 });
    expect(c.estimate).toBe(50);
    expect(countText(c)).toBe("about 50 messages (40 to 60)");
  });
  test("a time after the last message: none so far", () => {
    const f = facts({ delivered: { seq: 100, at: at("14:59:00") } });
    expect(countFromTime(at("14:59:30"), f, now)).toMatchObject({ min: 0, max: 0 });
    expect(replayText(countFromTime(at("14:59:30"), f, now), f, false)).toMatch(/^none so far/);
  });
});

test("facts from the API's JSON", () => {
  const now = Date.parse("2026-12-04T15:00:00Z");
  const f = replayFacts(
    { name: "ORDERS", subjects: ["orders.>"], messages: "95", firstSeq: "6", lastSeq: "100" },
    {
      config: { filterSubjects: ["orders.new"] }, oldestUnackedAge: "90s",
      state: { delivered: { streamSeq: "80", lastActive: "2026-12-04T14:58:00Z" }, ackFloor: { streamSeq: "70" } },
    },
    now,
  );
  expect(f).toEqual({
    stream: { firstSeq: 6, lastSeq: 100, messages: 95, subjects: ["orders.>"] },
    filters: ["orders.new"],
    delivered: { seq: 80, at: Date.parse("2026-12-04T14:58:00Z") },
    ackFloor: { seq: 70, at: undefined },
    oldestUnackedAt: now - 90_000,
  });
  expect(replayFacts({ name: "S" }, {}, now)).toMatchObject({ stream: { firstSeq: 0, lastSeq: 0, messages: 0, subjects: [] }, filters: [], oldestUnackedAt: undefined });
});

describe("the form", () => {
  const now = new Date("2026-12-04T15:00:00Z");
  test("a sequence: a whole number, 1 or more", () => {
    expect(replayTarget("sequence", "", "42", now)).toEqual({ sequence: "42" });
    expect(replayTarget("sequence", "", " 7 ", now)).toEqual({ sequence: "7" });
    for (const bad of ["", "0", "-3", "1.5", "1e3", "abc", "99999999999999999999"]) {
      expect(replayTarget("sequence", "", bad, now), bad).toBeInstanceOf(Error);
    }
  });
  test("a time: a local date and time, not in the future", () => {
    const before = new Date(now.getTime() - 90 * 60_000);
    const local = (t: Date) => {
      const p = (n: number) => String(n).padStart(2, "0");
      return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())}T${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())}`;
    };
    expect(replayTarget("time", local(before), "", now)).toEqual({ time: before.toISOString() });
    expect(replayTarget("time", local(now), "", now)).toEqual({ time: now.toISOString() });
    expect((replayTarget("time", local(new Date(now.getTime() + 60_000)), "", now) as Error).message).toMatch(/future/);
    expect(replayTarget("time", "", "", now)).toBeInstanceOf(Error);
    expect(replayTarget("time", "nonsense", "", now)).toBeInstanceOf(Error);
  });
  test("the other input is not read", () => {
    expect(replayTarget("sequence", "nonsense", "3", now)).toEqual({ sequence: "3" });
    expect(replayTarget("other", "", "3", now)).toBeInstanceOf(Error);
  });
});

test("who created a consumer", () => {
  expect(createdByText({ "jetgate.created_by": "alice" })).toBe("Created through jetgate's API by alice.");
  expect(createdByText({ "jetgate.created_by": "" })).toMatch(/API by \(anonymous/);
  expect(createdByText({ team: "a" })).toMatch(/^Not created through jetgate's API/);
  expect(createdByText(undefined)).toMatch(/^Not created/);
});
