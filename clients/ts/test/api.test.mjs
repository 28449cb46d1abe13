// The rest of the API through the client's own calls, against a real
// jetgate: a message's ttl, atomic batches, why a fetch is empty, pause and
// resume, a pinned group's pin and unpin, dead letters and redrive, the
// listings, and the library's own types (numbers, ms, Dates; no bigint).

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, AckPolicy, PriorityPolicy } from "../dist/index.js";
import { startJetgate, waitFor } from "./harness.mjs";

const text = (m) => new TextDecoder().decode(m.data);

// noBigint fails on a bigint anywhere in v (the library's own types have none).
function noBigint(v, path = "") {
  if (typeof v === "bigint") {
    assert.fail(`${path} is a bigint`);
  }
  if (v && typeof v === "object" && !(v instanceof Date) && !(v instanceof Uint8Array)) {
    for (const [k, x] of Object.entries(v)) {
      noBigint(x, `${path}.${k}`);
    }
  }
}

test("the API beyond fetch and settle", async (t) => {
  const consumers = [
    { name: "batch", ackWait: "30s" },
    { name: "admin", ackWait: "30s" },
    { name: "leases", ackWait: "30s" },
    { name: "dlq", ackWait: "30s", extra: "dead_letter: {subject: dead.dlq, on_term: true}" },
    { name: "pinned", ackWait: "30s", extra: "priority_groups: [main], priority_policy: pinned_client, priority_timeout: 2m" },
  ];
  const g = await startJetgate(consumers, t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());

  await t.test("publish with a ttl, and an atomic batch", async () => {
    const first = await client.publish("TEST", "test.batch", "t", { ttl: 60_000 });
    const ack = await client.publishBatch("TEST", [
      { subject: "test.batch", data: "a" },
      { subject: "test.batch", data: new TextEncoder().encode("b"), headers: { k: ["v1", "v2"] } },
      { subject: "test.batch", data: "c", ttl: 60_000 },
    ]);
    assert.deepEqual(ack, { stream: "TEST", seqs: [first.seq + 1, first.seq + 2, first.seq + 3] });
    const ms = await client.fetch("TEST", "batch", { batch: 10, expires: 2_000 });
    assert.deepEqual(ms.map(text), ["t", "a", "b", "c"]);
    assert.deepEqual(ms[2].headers.k, ["v1", "v2"]);
    assert.equal(ms.emptyReason, "");
    await Promise.all(ms.map((m) => m.ack()));
    await assert.rejects(client.publishBatch("TEST", []), (e) => e.code === 3); // InvalidArgument
  });

  await t.test("a fetch says why it is empty; pause and resume", async () => {
    const empty = await client.fetch("TEST", "admin", { expires: 200 });
    assert.deepEqual(empty, []);
    assert.equal(empty.emptyReason, "NO_MESSAGES");

    const st = await client.pause("TEST", "admin", { duration: 60_000 });
    assert.equal(st.paused, true);
    assert.ok(Math.abs(st.pauseUntil.getTime() - (Date.now() + 60_000)) < 10_000);
    const info = await client.getConsumer("TEST", "admin");
    assert.equal(info.state.paused, true);
    assert.ok(info.state.pauseRemaining > 50_000 && info.state.pauseRemaining <= 60_000, `${info.state.pauseRemaining}`);
    const [summary] = (await client.listConsumers("TEST")).filter((c) => c.name === "admin");
    assert.equal(summary.paused, true);
    await client.publish("TEST", "test.admin", "held back");
    const paused = await client.fetch("TEST", "admin", { expires: 300 });
    assert.equal(paused.length, 0);
    assert.equal(paused.emptyReason, "PAUSED");

    const until = new Date(Date.now() + 3_600_000);
    const again = await client.pause("TEST", "admin", { until });
    assert.ok(Math.abs(again.pauseUntil.getTime() - until.getTime()) < 1_000);
    assert.deepEqual(await client.resume("TEST", "admin"), { paused: false });
    const [m] = await client.fetch("TEST", "admin", { expires: 5_000 });
    assert.equal(text(m), "held back");
    await m.ack();
    await assert.rejects(client.pause("TEST", "admin", {}), RangeError);
  });

  await t.test("a pinned group's pin, and unpin", async () => {
    for (const body of ["1", "2", "3"]) {
      await client.publish("TEST", "test.pinned", body);
    }
    const first = await client.fetch("TEST", "pinned", { expires: 2_000 });
    assert.deepEqual(first.map(text), ["1"]);
    assert.ok(first.pinId);
    const others = await client.fetch("TEST", "pinned", { expires: 500 });
    assert.equal(others.emptyReason, "PINNED");
    const second = await client.fetch("TEST", "pinned", { expires: 2_000, pinId: first.pinId });
    assert.deepEqual(second.map(text), ["2"]);
    const info = await client.getConsumer("TEST", "pinned");
    assert.equal(info.config.priorityPolicy, PriorityPolicy.PINNED_CLIENT);
    assert.equal(info.config.priorityTimeout, 120_000);
    assert.deepEqual(info.state.priorityGroups.map((p) => [p.group, p.pinned]), [["main", true]]);

    await client.unpin("TEST", "pinned", { group: "main" });
    await waitFor(async () => !(await client.getConsumer("TEST", "pinned")).state.priorityGroups[0].pinned, 5_000, "the group unpinned");
    const third = await client.fetch("TEST", "pinned", { expires: 2_000 });
    assert.deepEqual(third.map(text), ["3"]);
    assert.ok(third.pinId && third.pinId !== first.pinId);
    await Promise.all([...first, ...second, ...third].map((m) => m.ack()));
  });

  await t.test("dead letters listed and redriven", async () => {
    await client.publish("TEST", "test.dlq", "poison", { headers: { "X-Order": "7" } });
    const [m] = await client.fetch("TEST", "dlq", { expires: 2_000 });
    await m.term("bad input");
    const page = await waitFor(async () => {
      const p = await client.listDeadLetters("TEST", "dlq");
      return p.total === 1 && p;
    }, 15_000, "the dead letter stored");
    noBigint(page, "page");
    const [dl] = page.deadLetters;
    assert.equal(dl.subject, "test.dlq");
    assert.equal(dl.reason, "TERM");
    assert.equal(new TextDecoder().decode(dl.dataPreview), "poison");
    assert.equal(dl.streamSeq, m.metadata.streamSeq);
    assert.deepEqual(dl.headers["X-Order"], ["7"]);
    assert.ok(dl.time instanceof Date);
    assert.equal(page.nextPageToken, "");
    assert.equal((await client.getConsumer("TEST", "dlq")).deadLetters, 1);

    const missing = await client.redrive("TEST", "dlq", { seqs: [dl.seq + 1000] });
    assert.deepEqual(missing, { redriven: 0, failures: [{ seq: dl.seq + 1000, code: 5, reason: "DEAD_LETTER_NOT_FOUND", message: missing.failures[0].message }] });
    assert.deepEqual(await client.redrive("TEST", "dlq", { seqs: [dl.seq] }), { redriven: 1, failures: [] });
    const [again] = await client.fetch("TEST", "dlq", { expires: 5_000 });
    assert.equal(text(again), "poison");
    assert.ok(again.metadata.streamSeq > m.metadata.streamSeq);
    await again.ack();
    assert.equal((await client.listDeadLetters("TEST", "dlq", { pageSize: 5 })).total, 0);
    await assert.rejects(client.redrive("TEST", "admin"), (e) => e.code === 9); // FailedPrecondition: NO_DEAD_LETTER
  });

  await t.test("listings, and the consumer's info, in the library's own types", async () => {
    const streams = await client.listStreams();
    const [s] = streams.filter((x) => x.name === "TEST");
    assert.deepEqual(s.subjects, ["test.>"]);
    assert.equal(s.consumers, consumers.length);
    assert.ok(s.lastSeq >= s.firstSeq && s.messages > 0 && s.bytes > 0);
    noBigint(streams, "streams");
    const listed = await client.listConsumers("TEST");
    noBigint(listed, "consumers");
    assert.deepEqual(listed.map((c) => c.name).sort(), consumers.map((c) => c.name).sort());
    assert.equal(listed.find((c) => c.name === "dlq").deadLetterConfigured, true);

    await client.publish("TEST", "test.leases", "x");
    const [m] = await client.fetch("TEST", "leases", { expires: 2_000 });
    const held = await client.listLeases("TEST", "leases");
    noBigint(held, "leases");
    assert.equal(held.holders.length, 1);
    assert.equal(held.holders[0].leases, 1);
    assert.equal(held.replicas.length, 1);
    assert.deepEqual(held.missingReplicas, []);
    const info = await client.getConsumer("TEST", "leases");
    noBigint(info, "info");
    assert.equal(info.state.numAckPending, 1);
    assert.equal(info.gatewayLeases, 1);
    assert.equal(info.config.ackWait, 30_000);
    assert.equal(info.config.ackPolicy, AckPolicy.EXPLICIT);
    assert.equal(info.state.delivered.streamSeq, m.metadata.streamSeq);
    assert.ok(info.state.created instanceof Date);
    await m.ack();
    assert.deepEqual((await client.listLeases("TEST", "leases")).holders, []);
  });
});
