// jetgate killed and restarted under a running subscriber: every message is
// handled, and no message runs in two handlers at once.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "../dist/index.js";
import { startJetgate, waitFor, publishN, state, freePort } from "./harness.mjs";

const work = (ms) => new Promise((r) => setTimeout(r, ms));

test("a jetgate restart mid-stream loses nothing and runs no message twice at once", async (t) => {
  const g = await startJetgate([{ name: "restart", ackWait: "2s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  const n = 400;
  await publishN(client, "restart", n);

  const inFlight = new Set();
  const handled = new Set();
  const overlaps = [];
  const errors = [];
  const sub = client.subscribe("TEST", "restart", async (m) => {
    const seq = m.metadata.streamSeq;
    if (inFlight.has(seq)) {
      overlaps.push(seq);
    }
    inFlight.add(seq);
    await work(20);
    inFlight.delete(seq);
    handled.add(seq);
  }, { maxMessages: 20, concurrency: 10, heartbeat: 1_000, onError: (e) => errors.push(e) });

  await waitFor(() => handled.size >= 100, 30_000, "100 messages handled");
  await g.kill("SIGKILL");
  const atKill = handled.size;
  await g.start();
  await waitFor(() => handled.size === n, 60_000, `all ${n} messages handled (${handled.size} so far)`);
  await waitFor(async () => {
    const st = await state(client, "restart");
    return st.numPending === 0 && st.numAckPending === 0;
  }, 30_000, "the consumer drained");
  await sub.close();
  t.diagnostic(`handled ${atKill} before the kill; stats ${JSON.stringify(sub.stats)}; errors: ${[...new Set(errors.map((e) => e.reason ?? e.message))].join(", ")}`);
  assert.ok(atKill < n, "the kill came after the work was done");
  assert.deepEqual(overlaps, [], "messages ran in two handlers at once");
  assert.ok(sub.stats.reconnects >= 1, "no reconnect counted");
  assert.ok(errors.length >= 1, "the stream's break was not reported");
});

test("a settle made while NATS is away is taken once NATS is back, within its lease", async (t) => {
  // The gateway answers UNAVAILABLE, for the call or for the token in its
  // failures; either way the sender tries again while the lease lives.
  const listen = `127.0.0.1:${await freePort()}`;
  const nats = await startJetgate([{ name: "natsaway", ackWait: "60s" }], t, { args: ["--nats-listen", listen] });
  const g = await startJetgate([{ name: "natsaway", ackWait: "60s" }], t, { args: ["--nats-url", `nats://${listen}`] });
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  await publishN(client, "natsaway", 1);
  const [m] = await client.fetch("TEST", "natsaway", { expires: 5_000 });
  // Stopped, not killed: a NATS killed before it wrote the delivery down
  // forgets it, and the gateway, seeing fewer deliveries than it received,
  // rightly takes that for a reset and refuses the old token (a CI run).
  await nats.kill("SIGTERM");
  const acked = m.ack();
  await nats.start();
  await acked;
  assert.equal((await state(client, "natsaway")).numAckPending, 0);
});

test("a stream that breaks is opened again at once, beside a handler still running", async (t) => {
  // The next stream opened only once every message in hand was finished:
  // one long job held back all other work after a blip.
  const g = await startJetgate([{ name: "beside", ackWait: "30s" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  let release;
  const gate = new Promise((r) => (release = r));
  const handled = [];
  const sub = client.subscribe("TEST", "beside", async (m) => {
    const text = Buffer.from(m.data).toString();
    if (text === "long") {
      await gate;
    }
    handled.push(text);
  }, { maxMessages: 4, onError: () => {} });
  try {
    await client.publish("TEST", "test.beside", "long");
    await waitFor(() => sub.stats.running === 1, 10_000, "the long job running");
    await g.kill();
    await g.start();
    await client.publish("TEST", "test.beside", "next");
    await waitFor(() => handled.includes("next"), 15_000, "the next message handled while the long job runs");
    assert.equal(sub.stats.running, 1);
    assert.ok(sub.stats.held <= 4);
  } finally {
    release();
    await sub.close();
  }
  assert.deepEqual(handled.sort(), ["long", "next"]);
});

// A stream that breaks while jetgate stays up (a proxy's or load balancer's
// reset, a 503 on the way): jetgate naks the broken stream's leases, so the
// handlers still running on them hold void tokens. Each message's redelivery
// came on the next stream only once its handler had finished (the room was
// theirs), after the handler's ack was refused LEASE_EXPIRED: it was not
// taken over but parked behind the finished handler, never dispatched, and
// handed back at close, to run again (every message handled twice). The
// redelivery now takes its handler's outcome.
test("a stream broken under running handlers, jetgate up, acks their redeliveries with their outcome", async (t) => {
  const net = await import("node:net");
  const g = await startJetgate([{ name: "blip", ackWait: "30s" }], t);
  const [host, port] = g.grpc.split(":");
  const sockets = new Set();
  const proxy = net.createServer((down) => {
    const up = net.connect(Number(port), host);
    for (const s of [down, up]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    down.pipe(up);
    up.pipe(down);
  });
  await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
  t.after(() => proxy.close());
  const client = new Client({ address: g.grpc });
  const viaProxy = new Client({ address: `127.0.0.1:${proxy.address().port}` });
  t.after(() => {
    client.close();
    viaProxy.close();
  });
  const n = 5;
  await publishN(client, "blip", n);
  let release;
  const gate = new Promise((r) => (release = r));
  const runs = new Map();
  const sub = viaProxy.subscribe("TEST", "blip", async (m) => {
    const seq = m.metadata.streamSeq;
    runs.set(seq, (runs.get(seq) ?? 0) + 1);
    await gate;
  }, { maxMessages: n, onError: () => undefined });
  try {
    await waitFor(() => sub.stats.running === n, 10_000, "every handler running");
    for (const s of sockets) {
      s.destroy(); // the stream breaks; jetgate stays up and naks its leases
    }
    await waitFor(() => sub.stats.reconnects >= 1, 10_000, "the break noticed");
    await waitFor(async () => {
      const { holders } = await client.listLeases("TEST", "blip");
      return holders.every((h) => h.leases === 0);
    }, 15_000, "jetgate to give back the broken stream's leases");
    release();
    await waitFor(async () => {
      const s = await state(client, "blip");
      return s.numAckPending === 0 && s.numPending === 0;
    }, 15_000, "every redelivery settled with its handler's outcome");
  } finally {
    release();
    await sub.close();
  }
  assert.equal(sub.stats.settleFailures, 0, `a refused settle that the redelivery took was reported: ${JSON.stringify(sub.stats)}`);
  assert.equal(sub.stats.adopted, n, JSON.stringify(sub.stats));
  assert.deepEqual([...runs.values()], Array(n).fill(1), "a message ran twice");
  assert.deepEqual(await client.fetch("TEST", "blip", { batch: n, expires: 1_000 }), [], "handled messages came back");
});
