// The unary calls against a real jetgate: publish, fetch, the settles, and
// Extend's new token.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, SettleError } from "../dist/index.js";
import { startJetgate, waitFor, state } from "./harness.mjs";

// recorder is a connect interceptor that keeps every settle request's tokens
// and every Extend's new tokens.
function recorder() {
  const calls = [];
  const interceptor = (next) => async (req) => {
    const res = await next(req);
    const name = req.method.name;
    if (["Ack", "Nak", "Term", "Extend"].includes(name)) {
      calls.push({ name, tokens: [...req.message.tokens], newTokens: name === "Extend" ? res.message.leases.map((l) => l.newToken) : [] });
    }
    return res;
  };
  return { calls, interceptor };
}

test("unary calls", async (t) => {
  const g = await startJetgate([{ name: "basic" }, { name: "expiry", ackWait: "1s" }, { name: "extend", ackWait: "1s" }], t);
  const rec = recorder();
  const client = new Client({ address: g.grpc, interceptors: [rec.interceptor] });
  t.after(() => client.close());

  await t.test("publish, fetch and ack round-trip data, headers and metadata", async () => {
    const ack = await client.publish("TEST", "test.basic", "hello", { headers: { "X-One": "1", "X-Many": ["a", "b"] }, msgId: "id-1" });
    assert.equal(ack.stream, "TEST");
    assert.ok(ack.seq > 0);
    const dup = await client.publish("TEST", "test.basic", "hello", { msgId: "id-1" });
    assert.equal(dup.duplicate, true);

    const [m, ...rest] = await client.fetch("TEST", "basic", { batch: 10, expires: 2_000 });
    assert.equal(rest.length, 0);
    assert.equal(new TextDecoder().decode(m.data), "hello");
    assert.equal(m.subject, "test.basic");
    assert.deepEqual(m.headers["X-Many"], ["a", "b"]);
    assert.deepEqual(m.headers["X-One"], ["1"]);
    assert.equal(m.metadata.streamSeq, ack.seq);
    assert.equal(m.metadata.numDelivered, 1);
    assert.ok(m.leaseDeadline.getTime() > Date.now());
    await m.ack();
    await m.ack(); // the same settle again succeeds
    await assert.rejects(m.nak(), (e) => e instanceof SettleError && e.reason === "LEASE_SETTLED");
    const st = await state(client, "basic");
    assert.equal(st.numAckPending, 0);
  });

  await t.test("an empty fetch is an empty list", async () => {
    const ms = await client.fetch("TEST", "basic", { batch: 5, expires: 0 });
    assert.deepEqual(ms, []);
  });

  await t.test("nak with a delay and term with a reason", async () => {
    await client.publish("TEST", "test.basic", "again");
    const [m] = await client.fetch("TEST", "basic", { expires: 2_000 });
    const before = Date.now();
    await m.nak({ delay: 300 });
    const [again] = await client.fetch("TEST", "basic", { expires: 5_000 });
    assert.ok(Date.now() - before >= 250, "redelivered before its delay");
    assert.equal(again.metadata.numDelivered, 2);
    await again.term("bad input");
    const st = await state(client, "basic");
    assert.equal(st.numAckPending, 0);
  });

  await t.test("a settle of an expired lease rejects with LEASE_EXPIRED", async () => {
    await client.publish("TEST", "test.expiry", "late");
    const [m] = await client.fetch("TEST", "expiry", { expires: 2_000 });
    await waitFor(() => Date.now() > m.leaseDeadline.getTime() + 50, 5_000, "the lease's deadline");
    await assert.rejects(m.ack(), (e) => e instanceof SettleError && e.reason === "LEASE_EXPIRED");
  });

  await t.test("settles asked together go as one call, and each learns its own outcome", async () => {
    await client.publish("TEST", "test.expiry", "old");
    const [old] = await client.fetch("TEST", "expiry", { expires: 2_000 });
    await waitFor(() => Date.now() > old.leaseDeadline.getTime() + 50, 5_000, "the first lease's deadline");
    await client.publish("TEST", "test.expiry", "new");
    // The first message comes back too (its lease ran out): take both.
    const fresh = await waitFor(async () => {
      const ms = await client.fetch("TEST", "expiry", { batch: 10, expires: 500 });
      return ms.length === 2 ? ms : (await Promise.all(ms.map((m) => m.nak())), false);
    }, 10_000, "two fresh leases");
    const before = rec.calls.length;
    const results = await Promise.allSettled([old.ack(), ...fresh.map((m) => m.ack())]);
    assert.equal(results[0].status, "rejected");
    assert.equal(results[0].reason.reason, "LEASE_EXPIRED");
    assert.deepEqual(results.slice(1).map((r) => r.status), ["fulfilled", "fulfilled"]);
    const acks = rec.calls.slice(before).filter((c) => c.name === "Ack");
    assert.equal(acks.length, 1, "the three acks went as more than one call");
    assert.equal(acks[0].tokens.length, 3);
  });

  await t.test("extend returns a new deadline, and the next settle carries its new token", async () => {
    await client.publish("TEST", "test.extend", "long");
    const [m] = await client.fetch("TEST", "extend", { expires: 2_000 });
    const first = m.token;
    const firstDeadline = m.leaseDeadline.getTime();
    await waitFor(() => Date.now() > firstDeadline - 400, 5_000, "near the deadline");
    const d = await m.extend();
    assert.ok(d.getTime() > firstDeadline, "the deadline moved");
    assert.notEqual(m.token, first);
    const ext = rec.calls.filter((c) => c.name === "Extend").at(-1);
    assert.deepEqual(ext.tokens, [first]);
    assert.equal(m.token, ext.newTokens[0]);
    // Past the first deadline only the extended lease is alive.
    await waitFor(() => Date.now() > firstDeadline + 100, 5_000, "past the first deadline");
    await m.ack();
    const ack = rec.calls.filter((c) => c.name === "Ack").at(-1);
    assert.deepEqual(ack.tokens, [m.token]);
    const st = await state(client, "extend");
    assert.equal(st.numAckPending, 0);
    assert.equal(st.numRedelivered, 0);
  });
});
