// Extend by a duration against a real jetgate: kept alive that long, 0 gives
// the message back, the gateway's limits.max_lease (1h by default) bounds it;
// on a fetched message and in a subscriber's handler.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, SettleError } from "../dist/index.js";
import { startJetgate, waitFor, state } from "./harness.mjs";

const invalidArgument = 3; // connect's Code.InvalidArgument
// work stands for a handler's own work of ms milliseconds.
const work = (ms) => new Promise((r) => setTimeout(r, ms));

test("extend by a duration", async (t) => {
  const g = await startJetgate([
    { name: "keep", ackWait: "1s" },
    { name: "giveback", ackWait: "30s" },
    { name: "keepsub", ackWait: "2s" },
    { name: "givebacksub", ackWait: "30s" },
  ], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());

  await t.test("several ack_waits: the lease is kept, not redelivered, and acks after the first ack_wait", async () => {
    await client.publish("TEST", "test.keep", "k");
    const [m] = await client.fetch("TEST", "keep", { expires: 2_000 });
    const first = m.token;
    const firstDeadline = m.leaseDeadline.getTime();
    const asked = Date.now();
    const d = await m.extend({ duration: 4_000 });
    assert.notEqual(m.token, first);
    assert.equal(m.leaseDeadline.getTime(), d.getTime());
    assert.ok(d.getTime() >= asked + 4_000 - 50 && d.getTime() <= Date.now() + 4_000, `deadline ${d.toISOString()}`);
    const { holders } = await client.listLeases("TEST", "keep");
    assert.equal(holders.length, 1);
    assert.equal(holders[0].kept, 1);
    assert.equal(holders[0].latestDeadline.getTime(), d.getTime());
    // Three ack_waits: the server redelivers nothing meanwhile.
    assert.deepEqual(await client.fetch("TEST", "keep", { expires: 3_000 }), []);
    assert.ok(Date.now() > firstDeadline + 2_000);
    await m.ack();
    const st = await state(client, "keep");
    assert.equal(st.numAckPending, 0);
    assert.equal(st.numRedelivered, 0);
  });

  await t.test("0 gives the message back at once", async () => {
    await client.publish("TEST", "test.giveback", "g");
    const [m] = await client.fetch("TEST", "giveback", { expires: 2_000 });
    const token = m.token;
    const t0 = Date.now();
    const back = await m.extend({ duration: 0 });
    assert.ok(back.getTime() <= Date.now() + 50);
    assert.equal(m.token, token);
    const [again] = await client.fetch("TEST", "giveback", { expires: 5_000 });
    assert.ok(Date.now() - t0 < 5_000, "not at once");
    assert.equal(again.metadata.streamSeq, m.metadata.streamSeq);
    assert.equal(again.metadata.numDelivered, 2);
    await assert.rejects(m.ack(), (e) => e instanceof SettleError && e.reason === "LEASE_SETTLED");
    await m.extend({ duration: 0 }); // the same give-back again is answered as the first
    await m.nak();
    await again.ack();
    await waitFor(async () => (await state(client, "giveback")).numAckPending === 0, 5_000, "ack pending 0");
  });

  await t.test("past limits.max_lease, or negative: InvalidArgument, and the lease is as it was", async () => {
    await client.publish("TEST", "test.giveback", "too long");
    const [m] = await client.fetch("TEST", "giveback", { expires: 2_000 });
    const token = m.token;
    const deadline = m.leaseDeadline.getTime();
    for (const duration of [2 * 3_600_000, -1_000]) {
      await assert.rejects(m.extend({ duration }), (e) => e instanceof SettleError && e.code === invalidArgument);
    }
    await assert.rejects(m.extend({ duration: Number.NaN }), RangeError);
    assert.equal(m.token, token);
    assert.equal(m.leaseDeadline.getTime(), deadline);
    await m.ack();
  });

  await t.test("a handler's extend by a duration: the subscriber leaves the kept lease alone", async () => {
    await client.publish("TEST", "test.keepsub", "long");
    const seen = [];
    let asked = 0;
    let kept;
    const sub = client.subscribe("TEST", "keepsub", async (m) => {
      seen.push(m.metadata.numDelivered);
      asked = Date.now();
      kept = await m.extend({ duration: 6_000 });
      await work(4_000); // two ack_waits
    });
    await waitFor(() => sub.stats.acked === 1, 20_000, "the kept message acked");
    await sub.close();
    assert.deepEqual(seen, [1]);
    assert.ok(kept.getTime() >= asked + 6_000 - 50);
    assert.equal(sub.stats.extended, 1); // the handler's own; the subscriber's: none were due
    assert.equal(sub.stats.settleFailures, 0);
    assert.equal(sub.stats.leasesLost, 0);
    const st = await state(client, "keepsub");
    assert.equal(st.numAckPending, 0);
    assert.equal(st.numRedelivered, 0);
  });

  await t.test("a handler's extend by 0 gives the message back: it runs again, once its first handler is done", async () => {
    await client.publish("TEST", "test.givebacksub", "back");
    const seen = [];
    const errors = [];
    const sub = client.subscribe("TEST", "givebacksub", async (m) => {
      seen.push(m.metadata.numDelivered);
      if (m.metadata.numDelivered === 1) {
        await m.extend({ duration: 0 });
        await assert.rejects(m.ack(), (e) => e instanceof SettleError && e.reason === "LEASE_SETTLED");
      }
    }, { onError: (e) => errors.push(e) });
    await waitFor(() => sub.stats.acked === 1, 15_000, "the message given back, handled again and acked");
    await sub.close();
    assert.deepEqual(seen, [1, 2]);
    assert.equal(sub.stats.naked, 1);
    assert.equal(sub.stats.handlerErrors, 0);
    assert.equal(sub.stats.settleFailures, 0);
    assert.deepEqual(errors, []);
    assert.equal((await state(client, "givebacksub")).numAckPending, 0);
  });
});

test("a held lease is extended a third of its lease before its deadline, however long the lease", async (t) => {
  // The lead was capped at 10s: with ack_wait 45s, a lease extended 10s
  // before its deadline (not 15s) was lost to a blip of 10s.
  const g = await startJetgate([{ name: "third", ackWait: "45s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  await client.publish("TEST", "test.third", "t");
  let got;
  let release;
  const done = new Promise((r) => (release = r));
  const sub = client.subscribe("TEST", "third", async (m) => {
    got = { at: Date.now(), deadline: m.leaseDeadline.getTime() };
    await done;
  });
  try {
    await waitFor(() => got, 10_000, "the message");
    await waitFor(() => sub.stats.extended >= 1, 45_000, "the first extend");
    const lease = got.deadline - got.at;
    const left = got.deadline - Date.now();
    assert.ok(left > lease / 3 - 2_500, `extended ${Math.round(left / 1000)}s before the deadline of a ${Math.round(lease / 1000)}s lease; want about a third, ${Math.round(lease / 3000)}s`);
  } finally {
    release();
    await sub.close();
  }
});
