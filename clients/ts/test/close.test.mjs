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

// A handler that closes its own subscription (stop after the message it was
// waiting for) and awaits it: the drain waited for every running handler,
// the calling one among them, so close hung its whole timeout and then
// handed back the message that handler had handled, which came back (a
// message handled twice). Called from a handler, close starts the close and
// resolves; the drain lets that handler finish and acks its message.
test("close awaited inside a handler lets that handler finish and acks its message", async (t) => {
  const g = await startJetgate([{ name: "inside", ackWait: "30s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  await publishN(client, "inside", 5);
  let handled;
  let took;
  let sub;
  let ready;
  const subscribed = new Promise((r) => (ready = r));
  sub = client.subscribe("TEST", "inside", async (m) => {
    await subscribed;
    if (handled === undefined) {
      handled = m.metadata.streamSeq;
      const t0 = Date.now();
      await sub.close({ timeout: 20_000 });
      took = Date.now() - t0;
    }
  }, { maxMessages: 5, concurrency: 1, onError: () => undefined });
  ready();
  await waitFor(() => took !== undefined, 30_000, "close inside the handler to resolve");
  assert.ok(took < 5_000, `close inside the handler took ${took}ms`);
  await sub.close();
  assert.equal(sub.stats.acked, 1, JSON.stringify(sub.stats));
  assert.equal(sub.stats.settleFailures, 0, JSON.stringify(sub.stats));
  const again = [];
  while (again.length < 4) {
    const ms = await client.fetch("TEST", "inside", { batch: 10, expires: 2_000 });
    if (ms.length === 0) break;
    for (const m of ms) {
      again.push(m.metadata.streamSeq);
      await m.ack();
    }
  }
  assert.equal(again.length, 4, `came back: ${again}`);
  assert.ok(!again.includes(handled), `the handled message #${handled} came back: ${again}`);
});

// The handler's context outlives it in what it left behind: a close from a
// timer the handler set, run after the handler returned, waits as any other.
test("close from a timer a finished handler left behind waits for the close", async (t) => {
  const g = await startJetgate([{ name: "later", ackWait: "30s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  await publishN(client, "later", 1);
  let closing;
  const closed = new Promise((r) => (closing = r));
  let ended = false;
  const sub = client.subscribe("TEST", "later", async () => {
    setTimeout(() => closing(sub.close().then(() => ended)), 50);
  }, { maxMessages: 1, onError: () => undefined });
  sub.closed.then(() => (ended = true));
  assert.equal(await closed, true, "close resolved before the subscription had stopped");
  assert.equal(sub.stats.acked, 1);
});

// close from inside a handler resolves at once; `closed` says when it is
// done. It resolved when the stream ended, before the nak of a lease the
// gateway keeps alive was sent: a process that exited then left the
// message to the keep-alive's end.
test("closed, after a close from inside a handler, resolves once what was held is handed back", async (t) => {
  const g = await startJetgate([{ name: "inclose", ackWait: "30s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  await publishN(client, "inclose", 1);
  let release;
  const released = new Promise((r) => (release = r));
  t.after(() => release());
  const sub = client.subscribe("TEST", "inclose", async (m) => {
    await m.extend({ duration: 60_000 }); // kept alive past the stream's end
    await sub.close({ mode: "nak" });
    await released;
  }, { maxMessages: 1, onError: () => undefined });
  await sub.closed;
  assert.equal(sub.stats.naked, 1, "closed resolved before the kept lease was nak'ed");
  assert.equal(sub.stats.extended, 1);
  const [back] = await client.fetch("TEST", "inclose", { batch: 1, expires: 1_000 });
  assert.ok(back, "the kept message was not handed back");
  await back.ack();
});
