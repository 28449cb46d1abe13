// Subscriptions of priority groups: the group and its policy's options reach
// the gateway, and a pinned_client group's pin is the subscription's own,
// kept when its stream is opened again and let go when the group is unpinned.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { Client, PriorityPolicy, reasonOf } from "../dist/index.js";
import { startJetgate, waitFor, publishN, freePort } from "./harness.mjs";

const pinned = "priority_groups: [main], priority_policy: pinned_client, priority_timeout: 2m";
const consumers = [
  { name: "pinsub", ackWait: "30s", extra: pinned },
  { name: "pinagain", ackWait: "30s", extra: pinned },
  { name: "groups", ackWait: "30s", extra: "priority_groups: [a, b], priority_policy: overflow" },
];

const sorted = (xs) => [...xs].sort((a, b) => a - b);

// replicas starts two jetgates on one NATS, the first's embedded one, with
// a token key and an admin block shared: a deployment's replicas.
async function replicas(t) {
  const listen = `127.0.0.1:${await freePort()}`;
  const more = 'admin: {streams: ["*"], consumers: ["*"]}\n';
  const first = await startJetgate(consumers, t, { args: ["--nats-listen", listen], more });
  const second = await startJetgate(consumers, t, { args: ["--nats-url", `nats://${listen}`], keyFile: first.keyFile, more });
  return [first, second];
}

test("a pinned subscription keeps its pin when its replica restarts", async (t) => {
  // The server holds the pin for priority_timeout (2m) after the pinned
  // client's last pull: a stream opened again without it would wait that
  // long, and a rival would take the group.
  const [first, second] = await replicas(t);
  const pub = new Client({ address: first.grpc });
  const viaSecond = new Client({ address: second.grpc });
  const handled = [];
  const rival = [];
  const errors = [];
  const sub = viaSecond.subscribe("TEST", "pinsub", async (m) => { handled.push(m.metadata.streamSeq); },
    { group: "main", heartbeat: 1_000, onError: (e) => errors.push(e) });
  let other;
  try {
    const seqs = await publishN(pub, "pinsub", 5);
    await waitFor(() => sub.stats.acked >= 5, 20_000, "the first five handled and acked");
    // A rival, once the group is pinned to the subscription.
    other = pub.subscribe("TEST", "pinsub", async (m) => { rival.push(m.metadata.streamSeq); },
      { group: "main", onError: () => {} });
    await second.kill("SIGKILL"); // its stream ends; NATS, and the pin, stay
    await second.start();
    seqs.push(...await publishN(pub, "pinsub", 5));
    await waitFor(() => handled.length >= 10, 20_000, "the next five handled by the pinned subscription, its pin kept");
    assert.deepEqual(sorted(new Set(handled)), sorted(seqs));
    assert.deepEqual(rival, []);
    assert.ok(sub.stats.reconnects >= 1, "no reconnect counted");
    assert.ok(!errors.some((e) => reasonOf(e).reason === "PIN_ID_MISMATCH"), "the pin was refused");
  } finally { // before the gateways stop
    await other?.close();
    await sub.close();
    pub.close();
    viaSecond.close();
  }
});

test("a pinned subscription goes on once its consumer is pinned no more", async (t) => {
  // The consumer's policy is changed from pinned_client, and the stream is
  // opened again (its replica restarted) with the pin it had: the gateway
  // refuses a pin for that consumer (INVALID_ARGUMENT), and the
  // subscription lets it go rather than end.
  const [first, second] = await replicas(t);
  const admin = new Client({ address: first.grpc });
  const viaSecond = new Client({ address: second.grpc });
  await admin.createConsumer("TEST", {
    durableName: "pinedit", filterSubjects: ["test.pinedit"], priorityGroups: ["main"],
    priorityPolicy: PriorityPolicy.PINNED_CLIENT, priorityTimeout: 2_000,
  });
  const handled = [];
  const errors = [];
  const sub = viaSecond.subscribe("TEST", "pinedit", async (m) => { handled.push(m.metadata.streamSeq); },
    { group: "main", heartbeat: 1_000, onError: (e) => errors.push(e) });
  try {
    await publishN(admin, "pinedit", 2);
    await waitFor(() => sub.stats.acked >= 2, 20_000, "two handled while pinned");
    await admin.updateConsumer("TEST", "pinedit", { priorityPolicy: PriorityPolicy.OVERFLOW }, "priorityPolicy");
    await second.kill("SIGKILL");
    await second.start();
    await publishN(admin, "pinedit", 2);
    await waitFor(() => handled.length >= 4, 20_000, "two more handled once pinned no more");
    assert.equal(sub.error, undefined);
    assert.ok(errors.some((e) => reasonOf(e).code === Code.InvalidArgument), "the refused pin was not reported");
  } finally {
    await sub.close();
    admin.close();
    viaSecond.close();
  }
});

test("priority options", async (t) => {
  const g = await startJetgate(consumers, t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());

  await t.test("a subscription whose group was unpinned is pinned again", async () => {
    // Its stream ends PIN_ID_MISMATCH; the stale pin is let go (sent again,
    // it would be refused for ever) and the next stream is pinned anew.
    const handled = [];
    const errors = [];
    const sub = client.subscribe("TEST", "pinagain", async (m) => { handled.push(m.metadata.streamSeq); },
      { group: "main", onError: (e) => errors.push(e) });
    try {
      await publishN(client, "pinagain", 3);
      await waitFor(() => handled.length >= 3, 20_000, "three handled");
      await client.unpin("TEST", "pinagain", { group: "main" });
      await publishN(client, "pinagain", 3);
      await waitFor(() => handled.length >= 6, 20_000, "three more handled, once pinned again");
      await waitFor(() => errors.some((e) => reasonOf(e).reason === "PIN_ID_MISMATCH"), 5_000, "the stream's end reported");
    } finally {
      await sub.close();
    }
  });

  await t.test("a subscription of one of several groups", async () => {
    const handled = [];
    const sub = client.subscribe("TEST", "groups", async (m) => { handled.push(m.metadata.streamSeq); },
      { group: "b", minPending: 1 });
    try {
      const seqs = await publishN(client, "groups", 3);
      await waitFor(() => handled.length >= 3, 20_000, "three handled in group b");
      assert.deepEqual(sorted(handled), sorted(seqs));
    } finally {
      await sub.close();
    }
  });

  for (const [what, opts] of [["an unknown group", { group: "nope" }], ["a priority of an overflow consumer", { group: "a", priority: 3 }],
    ["no group of a consumer of two", {}]]) {
    await t.test(`a subscription with ${what} fails on opening`, async () => {
      const sub = client.subscribe("TEST", "groups", async () => {}, { ...opts, onError: () => {} });
      await sub.closed;
      assert.equal(sub.error?.code, 3, `error ${sub.error}`); // INVALID_ARGUMENT: no retry mends it
    });
  }

  await t.test("priority options that are not whole numbers are refused", () => {
    for (const opts of [{ minPending: 1.5 }, { priority: -1 }, { priority: 10 }, { minAckPending: 2 ** 60 }]) {
      assert.throws(() => client.subscribe("TEST", "groups", async () => {}, opts), RangeError);
    }
  });

  // A reviewer saw maxMessages 0 taken for 1, and heartbeat 0 reconnect for
  // ever; an adopter saw ackBatch 5000 taken (the README: at most 1000) and
  // cut to 1000 without a word: out of range, an option is refused.
  await t.test("subscriber options out of range are refused", () => {
    for (const opts of [{ maxMessages: 0 }, { concurrency: 0 }, { heartbeat: 0 }, { heartbeat: 600_000 }, { ackBatch: 0 }, { ackBatch: 1001 },
      { maxLease: 0 }, { retry: { min: -1 } }, { retry: { min: 500, max: 100 } }, { maxBytes: 0 }]) {
      assert.throws(() => client.subscribe("TEST", "groups", async () => {}, opts), RangeError, JSON.stringify(opts));
    }
  });
});
