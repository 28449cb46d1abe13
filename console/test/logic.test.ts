import { describe, expect, test } from "vitest";
import {
  History, bidiRuns, configEntries, durationMs, errorText, escapeBidi, failureText, formatAge, formatCount, localInput, paths, pauseUntil,
  preview, principalName, redriveBody, relativeTime, sampleOf, sparkPoints,
} from "../src/logic";

describe("durations and ages", () => {
  test.each([
    ["", 0], ["0s", 0], ["1.5s", 1500], ["90s", 90000], ["0.000001s", 0], ["bogus", 0],
  ])("durationMs(%j) = %d", (d, ms) => expect(durationMs(d)).toBe(ms));
  test.each([
    [0, "0s"], [-5, "0s"], [NaN, "0s"], [999, "0s"], [45_000, "45s"], [200_000, "3m 20s"],
    [2 * 3600_000 + 5 * 60_000, "2h 5m"], [3 * 86400_000 + 4 * 3600_000, "3d 4h"],
  ])("formatAge(%d) = %s", (ms, s) => expect(formatAge(ms)).toBe(s));
  test.each([
    ["2026-01-01T10:09:58Z", "in 9m 58s"], ["2026-01-01T10:00:00.400Z", "now"], ["2026-01-01T09:59:48Z", "12s ago"],
    ["2026-01-01T11:00:00.000000001Z", "in 1h 0m"], ["", ""], [undefined, ""], ["bogus", ""],
  ])("relativeTime(%j) from 10:00:00", (at, s) => expect(relativeTime(at, Date.parse("2026-01-01T10:00:00Z"))).toBe(s));
  test("counts as int64 strings", () => {
    expect(formatCount("1234567")).toBe("1,234,567");
    expect(formatCount(undefined)).toBe("0");
  });
});

describe("history", () => {
  const s = (at: number, pending: number) => ({ at, pending, ackPending: 0, redelivered: 0, waiting: 0, oldestMs: 0 });
  test("keeps the window, in order, and drops stale answers", () => {
    const h = new History(10_000, 100);
    h.add("a", s(1000, 1));
    h.add("a", s(5000, 2));
    h.add("a", s(4000, 9)); // older than one kept: an answer that came late
    h.add("a", s(12_000, 3));
    expect(h.get("a").map((x) => x.pending)).toEqual([2, 3]);
    expect(h.get("b")).toEqual([]);
  });
  test("holds at most max samples", () => {
    const h = new History(1e9, 3);
    for (let i = 1; i <= 5; i++) h.add("a", s(i, i));
    expect(h.get("a").map((x) => x.pending)).toEqual([3, 4, 5]);
  });
  test("samples from the API's JSON", () => {
    expect(sampleOf(7, { numPending: "3", numAckPending: "2", oldestUnackedAge: "2.5s" })).toEqual({
      at: 7, pending: 3, ackPending: 2, redelivered: 0, waiting: 0, oldestMs: 2500,
    });
  });
});

describe("sparklines", () => {
  const s = (at: number, pending: number) => ({ at, pending, ackPending: 0, redelivered: 0, waiting: 0, oldestMs: 0 });
  test("time runs left to right, the highest value at the top", () => {
    expect(sparkPoints([s(0, 0), s(50, 10), s(100, 5)], "pending", 100, 100, 100, 22)).toBe("0,21 50,1 100,11");
  });
  test("all zero stays on the floor, nothing is empty", () => {
    expect(sparkPoints([s(90, 0), s(100, 0)], "pending", 100, 100, 100, 22)).toBe("90,21 100,21");
    expect(sparkPoints([], "pending", 100, 100, 100, 22)).toBe("");
  });
  test("samples older than the window are clamped to the left edge; one sample is a dash", () => {
    expect(sparkPoints([s(0, 1), s(900, 1)], "pending", 1000, 100, 50, 10)).toBe("0,1 0,1");
    expect(sparkPoints([s(100, 1)], "pending", 100, 600, 60, 10)).toBe("59,1 60,1");
  });
});

describe("API paths and bodies", () => {
  test("names are escaped", () => {
    expect(paths.consumer("OR DERS", "a/b")).toBe("/v1/streams/OR%20DERS/consumers/a%2Fb");
    expect(paths.action("S", "c", "redrive")).toBe("/v1/streams/S/consumers/c:redrive");
    expect(paths.deadLetters("S", "c")).toBe("/v1/streams/S/consumers/c/deadLetters?pageSize=20");
    expect(paths.deadLetters("S", "c", "42", 5)).toBe("/v1/streams/S/consumers/c/deadLetters?pageSize=5&pageToken=42");
  });
  test("redrive: the selected sequences in order, none for all", () => {
    expect(redriveBody("S", "c", new Set(["10", "2"]))).toEqual({ stream: "S", consumer: "c", seqs: ["2", "10"] });
    expect(redriveBody("S", "c", []).seqs).toEqual([]);
  });
  test("pause until: a future instant, else a sentence", () => {
    const now = new Date("2026-01-01T10:00:00Z");
    expect(pauseUntil("", now)).toBeInstanceOf(Error);
    expect(pauseUntil("nonsense", now)).toBeInstanceOf(Error);
    expect(pauseUntil("2020-01-01T00:00", now)).toBeInstanceOf(Error);
    const later = new Date(now.getTime() + 3600_000);
    expect(pauseUntil(localInput(later), now)).toBe(later.toISOString());
  });
  test("errors say the API's message and reason", () => {
    expect(errorText(403, { message: "alice may not read", details: [{ "@type": "x" }, { reason: "PERMISSION_DENIED" }] }))
      .toBe("alice may not read (PERMISSION_DENIED)");
    expect(errorText(502, null)).toBe("HTTP 502");
  });
  test("the anonymous principal is named", () => {
    expect(principalName("")).toMatch(/anonymous/);
    expect(principalName("bob")).toBe("bob");
  });
});

test("configuration: only the fields set", () => {
  expect(configEntries({ durableName: "billing", optStartTime: null, backoff: [], filterSubjects: ["a", "b"],
    priorityPolicy: "PRIORITY_POLICY_UNSPECIFIED", maxDeliver: "5", description: "" }))
    .toEqual([["durableName", "billing"], ["filterSubjects", "a, b"], ["maxDeliver", "5"]]);
});

describe("dead letter previews", () => {
  const b64 = (bytes: number[]) => btoa(String.fromCharCode(...bytes));
  test("text shows as text, with the size when cut", () => {
    expect(preview(btoa("hello"), 5)).toEqual({ text: "hello", binary: false });
    expect(preview(btoa("hello"), 3000).text).toBe("hello … (3000 bytes)");
  });
  test("bytes that are not text show as hex", () => {
    expect(preview(b64([0, 255, 16]), 3)).toEqual({ text: "00 ff 10", binary: true });
    expect(preview(b64([104, 105, 1]), 3).binary).toBe(true); // a control character
    expect(preview(undefined, 0)).toEqual({ text: "", binary: false });
  });
  test("text the gateway cut in the middle of a character shows as text, less that character", () => {
    // The preview is the first 1024 bytes: accented or CJK text cut there
    // was shown as a hex dump, marked binary.
    const enc = (s: string) => Array.from(new TextEncoder().encode(s));
    const cjk = enc("注文".repeat(400));
    expect(preview(b64(cjk.slice(0, 1024)), cjk.length)).toEqual({ text: "注文".repeat(170) + "注 … (2400 bytes)", binary: false });
    const accents = enc("é".repeat(600));
    expect(preview(b64(accents.slice(0, 1023)), accents.length)).toEqual({ text: "é".repeat(511) + " … (1200 bytes)", binary: false });
    expect(preview(b64(enc("ab").concat([0xe6, 0xb3])), 4).binary).toBe(true); // not cut: not text
  });
});

describe("bidirectional controls in names", () => {
  const every = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c"];
  test("a right-to-left override shows as its escape, marked, between the text as it is", () => {
    expect(bidiRuns("evil\u202etxt.exe")).toEqual([
      { text: "evil", escaped: false }, { text: "\\u202E", escaped: true }, { text: "txt.exe", escaped: false },
    ]);
    expect(escapeBidi("evil\u202etxt.exe")).toBe("evil\\u202Etxt.exe");
  });
  test.each(every.map((c) => [c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0"), c]))("U+%s is escaped", (code, c) => {
    expect(bidiRuns(c)).toEqual([{ text: `\\u${code}`, escaped: true }]);
    expect(escapeBidi(`a${c}b`)).toBe(`a\\u${code}b`);
  });
  test("runs of them, at either end, each escaped on its own", () => {
    expect(bidiRuns("\u2067\u202eab\u200f")).toEqual([
      { text: "\\u2067", escaped: true }, { text: "\\u202E", escaped: true }, { text: "ab", escaped: false }, { text: "\\u200F", escaped: true },
    ]);
    expect(escapeBidi(every.join(""))).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
  });
  test("other text is left as it is: right-to-left letters, joiners, neighbours of the controls", () => {
    for (const s of ["ORDERS", "orders.new", "שלום", "مرحبا", "a\u200db", "\u200b\u2029\u202f\u2065\u206a", "\\u202E"]) {
      expect(bidiRuns(s)).toEqual([{ text: s, escaped: false }]);
      expect(escapeBidi(s)).toBe(s);
    }
    expect(bidiRuns("")).toEqual([]);
  });
});

describe("failed calls", () => {
  test("say the status and the gateway's message", () => {
    expect(failureText(403, "reader may not manage (PERMISSION_DENIED)")).toBe("HTTP 403 Forbidden: reader may not manage (PERMISSION_DENIED)");
    expect(failureText(404, "consumer not found")).toBe("HTTP 404 Not Found: consumer not found");
  });
  test("without a message, the status alone", () => {
    expect(failureText(502, "HTTP 502")).toBe("HTTP 502 Bad Gateway");
    expect(failureText(599, "")).toBe("HTTP 599");
  });
});
