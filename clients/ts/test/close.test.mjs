// How a subscriber's close gives back what it holds, against a real jetgate
// (reviewers' findings).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "../dist/index.js";
import { startJetgate, waitFor, publishN, sleep } from "./harness.mjs";

// A lease a handler extended by a duration is kept alive by the gateway
// past its stream's end: closing the stream did not give it back, and it
// waited out the duration asked (up to max_lease). Both modes nak it.
for (const mode of ["nak", "drain"]) {
  test(`close ${mode}: a running handler that extended by a duration gives its message back`, async (t) => {
    const name = `kept${mode}`;
    const g = await startJetgate([{ name, ackWait: "2s" }], t);
    const client = new Client({ address: g.grpc });
    t.after(() => client.close());
    await publishN(client, name, 1);
    let started = false;
    let release;
    const released = new Promise((r) => (release = r));
    t.after(() => release());
    const sub = client.subscribe("TEST", name, async (m) => {
      await m.extend({ duration: 60_000 }); // a long job
      started = true;
      await released;
    }, { maxMessages: 1, onError: () => undefined });
    await waitFor(() => started, 10_000, "the handler's extend");
    const closed = Date.now();
    await sub.close({ mode, timeout: 500 });
    let back;
    while (!back && Date.now() - closed < 8_000) {
      [back] = await client.fetch("TEST", name, { batch: 1, expires: 1_000 });
    }
    assert.ok(back, `close ${mode} left the message to the gateway's keep-alive (not back within 8s)`);
    await back.ack();
  });
}

// A handler that returns while the subscriber's own extend of its lease is
// on its way: its ack waits behind the extend, and a drain that resolved
// before it landed let the stream's end nak the message, which ran again.
test("drain lands the ack of a handler that returned while its lease's extend was in flight", async (t) => {
  const g = await startJetgate([{ name: "drainx", ackWait: "1s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  for (let i = 0; i < 6; i++) {
    await publishN(client, "drainx", 1);
    let running = false;
    const sub = client.subscribe("TEST", "drainx", async (m) => {
      running = true;
      const left = m.leaseDeadline.getTime() - Date.now();
      await sleep(left - Math.max(left / 3, 20) + 1); // returns as the subscriber extends the lease
    }, { maxMessages: 1, onError: () => undefined });
    await waitFor(() => running, 10_000, "the handler running");
    await sub.close({ mode: "drain" });
    assert.equal(sub.stats.acked, 1, `round ${i}: drain resolved before the finished handler's ack landed`);
    const again = await client.fetch("TEST", "drainx", { batch: 1, expires: 1_500 });
    assert.equal(again.length, 0, `round ${i}: the message of a handler that finished came back`);
  }
});
