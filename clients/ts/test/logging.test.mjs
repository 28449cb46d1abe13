// A subscription without onError writes its errors with console.error; one
// with onError writes nothing (but what onError itself throws).

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "../dist/index.js";
import { startJetgate, waitFor } from "./harness.mjs";

// captured replaces console.error for the test; lines() is what was written.
function captured(t) {
  const calls = [];
  const orig = console.error;
  console.error = (...args) => calls.push(args);
  t.after(() => (console.error = orig));
  return { calls, lines: () => calls.map((a) => a.map(String).join(" ")) };
}

test("errors without onError", async (t) => {
  const g = await startJetgate([{ name: "logs", ackWait: "30s" }, { name: "logdrop", ackWait: "2s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());

  await t.test("a handler's error and a lease let go are written with console.error", async (t) => {
    const out = captured(t);
    await client.publish("TEST", "test.logs", "fails once");
    await client.publish("TEST", "test.logdrop", "held too long");
    let release;
    const released = new Promise((r) => (release = r));
    const handler = async (m) => {
      if (m.metadata.numDelivered > 1) {
        return;
      }
      if (m.subject === "test.logs") {
        throw new Error("boom");
      }
      await released;
    };
    const subs = [
      client.subscribe("TEST", "logs", handler, { retry: { min: 100 } }),
      client.subscribe("TEST", "logdrop", handler, { maxLease: 1_000 }),
    ];
    try {
      await waitFor(() => subs[0].stats.acked === 1 && subs[1].stats.leasesDropped === 1, 15_000, "a retry and a drop");
    } finally {
      release();
      await Promise.all(subs.map((s) => s.close()));
    }
    const failed = out.calls.filter((a) => a[1] instanceof Error && a[1].message === "boom");
    assert.equal(failed.length, 1, out.lines().join("\n"));
    assert.match(String(failed[0][0]), /^jetgate: subscription TEST\/logs, message #\d+ \(delivery 1\):$/);
    const dropped = out.lines().filter((l) => l.includes("MAX_LEASE"));
    assert.equal(dropped.length, 1, out.lines().join("\n"));
    assert.match(dropped[0], /^jetgate: subscription TEST\/logdrop, message #\d+ \(delivery 1\): LeaseError: MAX_LEASE/);
  });

  await t.test("onError silences it, and what onError throws is written", async (t) => {
    const out = captured(t);
    await client.publish("TEST", "test.logs", "fails once");
    const seen = [];
    const handler = (m) => {
      if (m.metadata.numDelivered === 1) {
        throw new Error("boom");
      }
    };
    let sub = client.subscribe("TEST", "logs", handler, { retry: { min: 100 }, onError: (e) => seen.push(e) });
    await waitFor(() => sub.stats.acked === 1, 10_000, "the retry acked");
    await sub.close();
    assert.equal(seen.length, 1);
    assert.deepEqual(out.calls, []);

    await client.publish("TEST", "test.logs", "fails once");
    sub = client.subscribe("TEST", "logs", handler, { retry: { min: 100 }, onError: () => { throw new Error("the callback's own bug"); } });
    await waitFor(() => sub.stats.acked === 1, 10_000, "the retry acked");
    await sub.close();
    assert.equal(out.calls.length, 1);
    assert.equal(out.calls[0][0], "jetgate: subscription TEST/logs: onError threw:");
    assert.equal(out.calls[0][1].message, "the callback's own bug");
  });

  await t.test("a consumer that does not exist: written, and the subscription ends with it as its error", async (t) => {
    const out = captured(t);
    const sub = client.subscribe("TEST", "nosuch", () => undefined);
    await sub.closed;
    assert.equal(sub.error.code, 5); // NotFound
    assert.equal(out.calls.length, 1);
    assert.match(out.lines()[0], /^jetgate: subscription TEST\/nosuch, stream: ConnectError: \[not_found\]/);
  });
});
