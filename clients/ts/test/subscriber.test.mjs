// The subscriber against a real jetgate: lease extension and maxLease, flow
// control, retries, close modes and settle tokens.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, FinalError, LeaseError, reasonOf } from "../dist/index.js";
import { startJetgate, waitFor, publishN, state } from "./harness.mjs";

// work stands for a handler's own work of ms milliseconds (not a wait for
// something to happen).
const work = (ms) => new Promise((r) => setTimeout(r, ms));

test("subscriber", async (t) => {
  const g = await startJetgate([
    { name: "slow", ackWait: "1s" },
    { name: "maxlease", ackWait: "1s" },
    { name: "flow" },
    { name: "bytes" },
    { name: "retry" },
    { name: "final" },
    { name: "drain", ackWait: "30s" },
    { name: "naked", ackWait: "30s" },
    { name: "tokens", ackWait: "1s" },
    { name: "adopt", ackWait: "1s" },
  ], t);
  const calls = [];
  const client = new Client({
    address: g.grpc,
    interceptors: [(next) => async (req) => {
      const res = await next(req);
      if (["Ack", "Extend"].includes(req.method.name)) {
        calls.push({ name: req.method.name, consumer: req.message.consumer, tokens: [...req.message.tokens], newTokens: req.method.name === "Extend" ? res.message.leases.map((l) => l.newToken) : [] });
      }
      return res;
    }],
  });
  t.after(() => client.close());

  await t.test("a consumer that does not exist ends the subscription, reported to onError", async () => {
    const errors = [];
    const sub = client.subscribe("TEST", "nosuch", () => undefined, { onError: (e) => errors.push(e) });
    await sub.closed;
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 5); // NotFound
    assert.equal(sub.error, errors[0]);
  });

  await t.test("a handler slower than ack_wait is not redelivered while it runs", async () => {
    const [seq] = await publishN(client, "slow", 1);
    const seen = [];
    const sub = client.subscribe("TEST", "slow", async (m) => {
      seen.push(m.metadata.numDelivered);
      await work(3_500); // three and a half ack_waits
    });
    await waitFor(() => sub.stats.acked === 1, 15_000, "the ack");
    await sub.close();
    assert.deepEqual(seen, [1]);
    assert.ok(sub.stats.extended >= 2, `extended ${sub.stats.extended} times`);
    const st = await state(client, "slow");
    assert.equal(st.numRedelivered, 0);
    assert.equal(st.numAckPending, 0);
    assert.equal(st.ackFloor.streamSeq, seq);
  });

  await t.test("a lease is let go after maxLease, and its message comes back after the handler", async () => {
    await publishN(client, "maxlease", 1);
    const seen = [];
    const errors = [];
    let running = 0;
    let overlap = false;
    const sub = client.subscribe("TEST", "maxlease", async (m) => {
      overlap ||= running > 0;
      running++;
      seen.push(m.metadata.numDelivered);
      if (m.metadata.numDelivered === 1) {
        await work(2_500);
      }
      running--;
    }, { maxLease: 1_500, onError: (e) => errors.push(e) });
    await waitFor(() => seen.length >= 2, 20_000, "the redelivery");
    await waitFor(() => sub.stats.acked === 1, 10_000, "the redelivery's ack");
    await sub.close();
    assert.ok(sub.stats.leasesDropped >= 1);
    assert.ok(errors.some((e) => e instanceof LeaseError && e.reason === "MAX_LEASE"));
    assert.ok(seen[1] >= 2, `second run saw delivery ${seen[1]}`);
    assert.equal(overlap, false, "two handlers ran the message at once");
  });

  await t.test("maxMessages and concurrency hold with a backlog of thousands", async () => {
    const n = 3_000;
    await publishN(client, "flow", n);
    let running = 0;
    let maxRunning = 0;
    let maxHeld = 0;
    let handled = 0;
    let maxServer = 0;
    const sub = client.subscribe("TEST", "flow", async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      maxHeld = Math.max(maxHeld, sub.stats.held);
      await work(1);
      running--;
      handled++;
    }, { maxMessages: 20, concurrency: 5 });
    const sampler = setInterval(() => {
      state(client, "flow").then((s) => (maxServer = s.numAckPending > maxServer ? s.numAckPending : maxServer), () => undefined);
    }, 50);
    try {
      await waitFor(() => sub.stats.acked === n, 60_000, `${n} acks`);
    } finally {
      clearInterval(sampler);
    }
    await sub.close();
    assert.equal(handled, n);
    assert.ok(maxRunning <= 5, `${maxRunning} handlers ran at once`);
    assert.ok(maxHeld <= 20, `${maxHeld} messages held at once`);
    assert.ok(maxServer <= 20, `the consumer had ${maxServer} acks pending`);
    const acks = calls.filter((c) => c.name === "Ack" && c.consumer === "flow");
    assert.equal(acks.reduce((k, c) => k + c.tokens.length, 0), n);
    assert.ok(acks.length < n / 3, `${n} acks took ${acks.length} calls`);
  });

  await t.test("maxBytes holds: never more bytes in handlers or waiting than asked", async () => {
    const n = 300;
    await publishN(client, "bytes", n, () => "y".repeat(1_000));
    const limit = 5 * 1_020; // five messages of 1,000 bytes and subject test.bytes
    let maxBytes = 0;
    let maxHeld = 0;
    const sub = client.subscribe("TEST", "bytes", async () => {
      maxBytes = Math.max(maxBytes, sub.stats.heldBytes);
      maxHeld = Math.max(maxHeld, sub.stats.held);
      await work(2);
    }, { maxMessages: 100, maxBytes: limit });
    await waitFor(() => sub.stats.acked === n, 60_000, `${n} acks`);
    await sub.close();
    assert.ok(maxBytes <= limit, `${maxBytes} bytes held, limit ${limit}`);
    assert.ok(maxHeld <= 5, `${maxHeld} messages held under a limit of five messages' bytes`);
  });

  await t.test("a rejecting handler's message comes back with its delivery count raised and the delay grown", async () => {
    await publishN(client, "retry", 1);
    const seen = [];
    const sub = client.subscribe("TEST", "retry", async (m) => {
      seen.push({ n: m.metadata.numDelivered, at: Date.now() });
      if (m.metadata.numDelivered < 4) {
        throw new Error("not yet");
      }
    }, { retry: { min: 200, max: 5_000 }, onError: () => undefined });
    await waitFor(() => sub.stats.acked === 1, 20_000, "the fourth delivery's ack");
    await sub.close();
    assert.deepEqual(seen.map((s) => s.n), [1, 2, 3, 4]);
    const gaps = seen.slice(1).map((s, i) => s.at - seen[i].at);
    assert.ok(gaps[0] >= 180, `first retry after ${gaps[0]}ms, asked 200`);
    assert.ok(gaps[1] >= 380, `second retry after ${gaps[1]}ms, asked 400`);
    assert.ok(gaps[2] >= 780, `third retry after ${gaps[2]}ms, asked 800`);
    assert.equal(sub.stats.handlerErrors, 3);
    assert.equal(sub.stats.naked, 3);
  });

  await t.test("a FinalError terms the message, and msg.term inside the handler wins", async () => {
    await publishN(client, "final", 2);
    const seen = [];
    const sub = client.subscribe("TEST", "final", async (m) => {
      seen.push(m.metadata.streamSeq);
      if (seen.length === 1) {
        throw new FinalError("cannot parse");
      }
      await m.term("handled by hand");
      throw new Error("the term above wins over this nak");
    }, { retry: { min: 100 }, onError: () => undefined });
    await waitFor(() => sub.stats.termed === 2, 10_000, "two terms");
    await sub.close();
    assert.equal(seen.length, 2);
    assert.equal(sub.stats.naked, 0);
    const st = await state(client, "final");
    assert.equal(st.numAckPending, 0);
    assert.equal(st.numRedelivered, 0);
  });

  // takeRest fetches and acks what is left of a consumer until GetConsumer
  // says nothing is pending or leased; with ack_wait 30s, anything left to
  // ack_wait would hold it up past the deadline.
  async function takeRest(consumer, ms) {
    let taken = 0;
    await waitFor(async () => {
      const ms = await client.fetch("TEST", consumer, { batch: 500, expires: 100 });
      await Promise.all(ms.map((m) => m.ack()));
      taken += ms.length;
      const st = await state(client, consumer);
      return st.numPending === 0 && st.numAckPending === 0;
    }, ms, `${consumer} drained by fetch (ack_wait is 30s)`);
    return taken;
  }

  await t.test("close in drain mode lets running handlers finish and leaves nothing to ack_wait", async () => {
    await publishN(client, "drain", 200);
    let started = 0;
    let finished = 0;
    const sub = client.subscribe("TEST", "drain", async () => {
      started++;
      await work(300);
      finished++;
    }, { maxMessages: 50, concurrency: 5 });
    await waitFor(() => started >= 5 && sub.stats.held >= 20, 10_000, "handlers running and messages waiting");
    await sub.close({ mode: "drain", timeout: 10_000 });
    assert.equal(finished, started, "a running handler was cut short");
    assert.equal(sub.stats.acked, started);
    assert.ok(sub.stats.returned > 0, "the waiting messages were not handed back");
    const taken = await takeRest("drain", 5_000);
    assert.equal(taken + started, 200);
  });

  await t.test("close in nak mode hands everything in hand back at once", async () => {
    await publishN(client, "naked", 100);
    let release;
    const gate = new Promise((r) => (release = r));
    let started = 0;
    const sub = client.subscribe("TEST", "naked", async () => {
      started++;
      await gate;
    }, { maxMessages: 30, concurrency: 10 });
    await waitFor(() => started === 10 && sub.stats.held === 30, 10_000, "10 running, 20 waiting");
    const began = Date.now();
    await sub.close({ mode: "nak" });
    assert.ok(Date.now() - began < 2_000, "nak mode waited for handlers");
    assert.equal(sub.stats.returned, 30);
    assert.equal(sub.stats.acked, 0);
    const taken = await takeRest("naked", 5_000);
    assert.equal(taken, 100);
    release();
  });

  await t.test("a redelivery of a message whose handler still runs is settled by that handler, not run again", async () => {
    await publishN(client, "adopt", 1);
    let runs = 0;
    const sub = client.subscribe("TEST", "adopt", async () => {
      runs++;
      // The process stalls past the lease (no extension can go out), so
      // the server redelivers the message while this handler has it.
      const end = Date.now() + 1_300;
      while (Date.now() < end) {
        // busy
      }
      await waitFor(() => sub.stats.adopted === 1, 10_000, "the redelivery");
    }, { onError: () => undefined });
    await waitFor(() => sub.stats.acked === 1, 15_000, "the ack");
    await sub.close();
    assert.equal(runs, 1);
    const st = await state(client, "adopt");
    assert.equal(st.numAckPending, 0);
    assert.equal(st.delivered.streamSeq, st.ackFloor.streamSeq);
  });

  await t.test("each settle carries the token of the message's latest Extend", async () => {
    await publishN(client, "tokens", 1);
    const sub = client.subscribe("TEST", "tokens", async () => {
      await work(2_500);
    });
    await waitFor(() => sub.stats.acked === 1, 10_000, "the ack");
    await sub.close();
    const extends_ = calls.filter((c) => c.name === "Extend" && c.consumer === "tokens");
    const acks = calls.filter((c) => c.name === "Ack" && c.consumer === "tokens");
    assert.ok(extends_.length >= 2, `${extends_.length} extends`);
    for (let i = 1; i < extends_.length; i++) {
      assert.deepEqual(extends_[i].tokens, extends_[i - 1].newTokens, "an extend used an old token");
    }
    assert.deepEqual(acks.at(-1).tokens, extends_.at(-1).newTokens, "the ack used an old token");
  });
});

// A message larger than maxBytes can never be held: jetgate ended every
// stream MESSAGE_TOO_LARGE and the subscription reconnected for ever (7
// reconnects in 8 s), handling nothing behind it and never ending. It now
// ends with that error, as for any error no retry can mend, and the message
// stays for a reader that can take it.
test("a message larger than maxBytes ends the subscription with MESSAGE_TOO_LARGE", async (t) => {
  const g = await startJetgate([{ name: "toolarge", ackWait: "30s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  await client.publish("TEST", "test.toolarge", "x".repeat(2_000));
  const sub = client.subscribe("TEST", "toolarge", async () => undefined, { maxBytes: 1_000, onError: () => undefined });
  const ended = await Promise.race([sub.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 10_000))]);
  await sub.close();
  assert.ok(ended, `the subscription went on (${sub.stats.reconnects} reconnects)`);
  assert.equal(reasonOf(sub.error).reason, "MESSAGE_TOO_LARGE");
  const [m] = await client.fetch("TEST", "toolarge", { expires: 2_000 });
  assert.ok(m, "the message is still there");
  await m.ack();
});
