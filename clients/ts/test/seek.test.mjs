// Seek, and consumers through the API (create, update, delete), against a
// real jetgate whose admin block lets callers make consumers.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { AckPolicy, Client, DeliverPolicy, SettleError, reasonOf } from "../dist/index.js";
import { startJetgate, waitFor } from "./harness.mjs";

const text = (m) => new TextDecoder().decode(m.data);
const admin = 'admin: {streams: ["*"], consumers: ["*"]}\n';

// fetchAll leases exactly n messages of the consumer, in order.
async function fetchAll(client, consumer, n) {
  const got = [];
  await waitFor(async () => {
    got.push(...(await client.fetch("TEST", consumer, { batch: n - got.length, expires: 1_000 })));
    return got.length >= n;
  }, 15_000, `${n} messages of ${consumer}`);
  assert.equal(got.length, n);
  return got;
}

async function publish(client, consumer, ...bodies) {
  const seqs = [];
  for (const b of bodies) {
    seqs.push((await client.publish("TEST", `test.${consumer}`, b)).seq);
  }
  return seqs;
}

// rejectsWith checks a call fails with the gRPC code given and a reason of
// the gateway's own (its ErrorInfo, not the code's name), and returns it.
async function rejectsWith(p, code) {
  let reason;
  await assert.rejects(p, (e) => {
    assert.equal(e.code, code, `code ${e.code}: ${e.message}`);
    ({ reason } = reasonOf(e));
    return true;
  });
  return reason;
}

test("seek, and consumers through the API", async (t) => {
  const g = await startJetgate([
    { name: "seek", ackWait: "30s" },
    { name: "seektime", ackWait: "30s" },
    { name: "seekfloor", ackWait: "30s" },
  ], t, { more: admin });
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());

  await t.test("a seek to a sequence delivers again from there", async () => {
    const seqs = await publish(client, "seek", "1", "2", "3", "4", "5");
    await Promise.all((await fetchAll(client, "seek", 5)).map((m) => m.ack()));
    seqs.push(...(await publish(client, "seek", "6")));
    const [held] = await fetchAll(client, "seek", 1); // a lease from before the seek

    const r = await client.seek("TEST", "seek", { sequence: seqs[2] });
    assert.equal(r.resetSequence, seqs[2]);
    assert.equal(r.state.ackFloor.streamSeq, seqs[2] - 1);
    assert.equal(r.state.numPending, 4);
    assert.equal(typeof r.resetSequence, "number");

    const again = await fetchAll(client, "seek", 4);
    assert.deepEqual(again.map(text), ["3", "4", "5", "6"]);
    assert.deepEqual(again.map((m) => m.metadata.streamSeq), seqs.slice(2));
    // The server's reset starts the consumer afresh: each is its first delivery since.
    assert.deepEqual(again.map((m) => m.metadata.numDelivered), [1, 1, 1, 1]);
    // The lease from before is void.
    await assert.rejects(held.ack(), (e) => e instanceof SettleError && e.reason === "LEASE_EXPIRED");
    await Promise.all(again.map((m) => m.ack()));
  });

  await t.test("a seek to a time delivers what was stored since", async () => {
    await publish(client, "seektime", "old1", "old2");
    const first = await fetchAll(client, "seektime", 2);
    await waitFor(() => Date.now() - first[1].metadata.timestamp.getTime() > 20, 1_000, "20ms");
    await publish(client, "seektime", "new1", "new2");
    const second = await fetchAll(client, "seektime", 2);
    await Promise.all([...first, ...second].map((m) => m.ack()));

    // A Date has milliseconds and the message's is rounded: a millisecond
    // before it is at or before the store time, and 20ms after old2's.
    const r = await client.seek("TEST", "seektime", { time: new Date(second[0].metadata.timestamp.getTime() - 1) });
    assert.equal(r.resetSequence, second[0].metadata.streamSeq);
    const again = await fetchAll(client, "seektime", 2);
    assert.deepEqual(again.map(text), ["new1", "new2"]);
    await Promise.all(again.map((m) => m.ack()));
    assert.deepEqual(await client.fetch("TEST", "seektime", { expires: 300 }), []);
  });

  await t.test("a seek to the ack floor delivers everything not acknowledged, now", async () => {
    await publish(client, "seekfloor", "a", "b", "c");
    const [a, b, c] = await fetchAll(client, "seekfloor", 3); // ack_wait 30s: nothing comes back by itself
    await a.ack();
    const r = await client.seek("TEST", "seekfloor", { ackFloor: true });
    assert.equal(r.resetSequence, b.metadata.streamSeq);
    const again = await fetchAll(client, "seekfloor", 2);
    assert.deepEqual(again.map(text), ["b", "c"]);
    for (const old of [b, c]) {
      await assert.rejects(old.ack(), (e) => e instanceof SettleError && e.reason === "LEASE_EXPIRED");
    }
    await Promise.all(again.map((m) => m.ack()));
  });

  await t.test("seek errors: client-side and the server's", async () => {
    await assert.rejects(client.seek("TEST", "seek", { sequence: 1, ackFloor: true }), /exactly one.*sequence and ackFloor/);
    await assert.rejects(client.seek("TEST", "seek", {}), RangeError);
    await assert.rejects(client.seek("TEST", "seek", { sequence: 0 }), RangeError);
    assert.equal(await rejectsWith(client.seek("TEST", "seek", { time: new Date(Date.now() + 3_600_000) }), Code.InvalidArgument), "SEEK_TIME_IN_FUTURE");
    await rejectsWith(client.seek("TEST", "nobody", { ackFloor: true }), Code.NotFound);

    // A consumer that starts at a sequence cannot go below it.
    const [, start] = await publish(client, "fromseq", "x", "y");
    await client.createConsumer("TEST", {
      durableName: "fromseq", filterSubjects: ["test.fromseq"], deliverPolicy: DeliverPolicy.BY_START_SEQUENCE, optStartSeq: start,
    });
    try {
      assert.equal(await rejectsWith(client.seek("TEST", "fromseq", { sequence: start - 1 }), Code.InvalidArgument), "SEEK_BELOW_START");
      assert.equal((await client.seek("TEST", "fromseq", { sequence: start })).resetSequence, start);
    } finally {
      await client.deleteConsumer("TEST", "fromseq");
    }
  });

  await t.test("create, fetch, update ack_wait, delete", async () => {
    const made = await client.createConsumer("TEST", {
      durableName: "made", filterSubjects: ["test.made"], ackWait: 30_000, maxDeliver: 5,
      description: "made by the TypeScript tests", metadata: { team: "ts" },
    });
    assert.equal(made.config.durableName, "made");
    assert.equal(made.config.ackPolicy, AckPolicy.EXPLICIT);
    assert.equal(made.config.ackWait, 30_000);
    assert.equal(made.config.maxDeliver, 5);
    assert.equal(made.config.metadata.team, "ts");
    // Its creator, in its metadata: "anonymous" where authentication is off, as here.
    assert.equal(made.config.metadata["jetgate.created_by"], "anonymous");
    const [listed] = (await client.listConsumers("TEST")).filter((c) => c.name === "made");
    assert.equal(listed.createdBy, "anonymous");
    assert.equal(await rejectsWith(client.createConsumer("TEST", { durableName: "made" }), Code.AlreadyExists), "CONSUMER_EXISTS");

    await publish(client, "made", "hello");
    const [m] = await fetchAll(client, "made", 1);
    assert.equal(text(m), "hello");
    await m.ack();

    const u = await client.updateConsumer("TEST", "made", { ackWait: 2_000, maxDeliver: 9 }, ["ackWait", "max_deliver"]);
    assert.equal(u.config.ackWait, 2_000);
    assert.equal(u.config.maxDeliver, 9);
    assert.equal(u.config.description, "made by the TypeScript tests"); // not in the mask: kept
    assert.equal((await client.getConsumer("TEST", "made")).config.ackWait, 2_000);
    assert.equal((await client.updateConsumer("TEST", "made", { description: "changed" }, "description")).config.description, "changed");
    await publish(client, "made", "after");
    const [n] = await fetchAll(client, "made", 1);
    const left = n.leaseDeadline.getTime() - Date.now();
    assert.ok(left > 0 && left <= 2_500, `${left}ms left`); // new leases follow the new ack_wait
    await n.ack();

    assert.equal(await client.deleteConsumer("TEST", "made"), undefined);
    await rejectsWith(client.getConsumer("TEST", "made"), Code.NotFound);
    assert.ok(!(await client.listConsumers("TEST")).some((c) => c.name === "made"));
  });

  await t.test("consumer admin errors", async () => {
    await rejectsWith(client.createConsumer("TEST", { filterSubjects: ["test.x"] }), Code.InvalidArgument); // no name
    for (const ackPolicy of [AckPolicy.NONE, AckPolicy.ALL]) { // nothing jetgate could serve with leases
      await rejectsWith(client.createConsumer("TEST", { durableName: `acks${ackPolicy}`, ackPolicy }), Code.InvalidArgument);
    }
    // Past the admin block's bound (1h by default).
    assert.equal(await rejectsWith(client.createConsumer("TEST", { durableName: "slowest", ackWait: 7_200_000 }), Code.InvalidArgument), "ADMIN_BOUND");
    await assert.rejects(client.createConsumer("TEST", { name: "x" }), /not a field of ConsumerConfig/);
    await assert.rejects(client.createConsumer("TEST", { durableName: "x", ackWait: "30s" }), RangeError);
    await assert.rejects(client.updateConsumer("TEST", "seek", { ackWait: 5_000 }, []), /updateMask/);
    await assert.rejects(client.updateConsumer("TEST", "seek", { ackWait: 5_000 }, ["ackWaitz"]), /updateMask/);
    // The file's consumers are never changed or deleted through the API.
    assert.equal(await rejectsWith(client.updateConsumer("TEST", "seek", { ackWait: 5_000 }, "ackWait"), Code.FailedPrecondition), "CONSUMER_CONFIGURED");
    assert.equal(await rejectsWith(client.deleteConsumer("TEST", "seek"), Code.FailedPrecondition), "CONSUMER_CONFIGURED");
    assert.equal((await client.getConsumer("TEST", "seek")).config.ackWait, 30_000);
    await rejectsWith(client.deleteConsumer("TEST", "nobody"), Code.NotFound);
  });
});
