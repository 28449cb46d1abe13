// Subscriptions of priority groups: the group and its policy's options reach
// the gateway, and a pinned_client group's pin is the subscription's own,
// kept when its stream is opened again and let go when the group is unpinned.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, reasonOf } from "../dist/index.js";
import { startJetgate, waitFor, publishN, freePort } from "./harness.mjs";

const pinned = "priority_groups: [main], priority_policy: pinned_client, priority_timeout: 2m";
const consumers = [
  { name: "pinsub", ackWait: "30s", extra: pinned },
  { name: "pinagain", ackWait: "30s", extra: pinned },
  { name: "groups", ackWait: "30s", extra: "priority_groups: [a, b], priority_policy: overflow" },
];

const sorted = (xs) => [...xs].sort((a, b) => a - b);

test("a pinned subscription keeps its pin when its replica restarts", async (t) => {
  // The server holds the pin for priority_timeout (2m) after the pinned
  // client's last pull: a stream opened again without it would wait that
  // long, and a rival would take the group.
  const listen = `127.0.0.1:${await freePort()}`;
  const first = await startJetgate(consumers, t, { args: ["--nats-listen", listen] });
  const second = await startJetgate(consumers, t, { args: ["--nats-url", `nats://${listen}`], keyFile: first.keyFile });
  const pub = new Client({ address: first.grpc });
  const viaSecond = new Client({ address: second.grpc });
  t.after(() => { pub.close(); viaSecond.close(); });
  const handled = [];
  const rival = [];
  const errors = [];
  const sub = viaSecond.subscribe("TEST", "pinsub", async (m) => { handled.push(m.metadata.streamSeq); },
    { group: "main", heartbeat: 1_000, onError: (e) => errors.push(e) });
  t.after(() => sub.close());
  const seqs = await publishN(pub, "pinsub", 5);
  await waitFor(() => sub.stats.acked >= 5, 20_000, "the first five handled and acked");
  // A rival, once the group is pinned to the subscription.
  const other = pub.subscribe("TEST", "pinsub", async (m) => { rival.push(m.metadata.streamSeq); },
    { group: "main", onError: () => {} });
  t.after(() => other.close());
  await second.kill("SIGKILL"); // its stream ends; NATS, and the pin, stay
  await second.start();
  seqs.push(...await publishN(pub, "pinsub", 5));
  await waitFor(() => handled.length >= 10, 20_000, "the next five handled by the pinned subscription, its pin kept");
  assert.deepEqual(sorted(new Set(handled)), sorted(seqs));
  assert.deepEqual(rival, []);
  assert.ok(sub.stats.reconnects >= 1, "no reconnect counted");
  assert.ok(!errors.some((e) => reasonOf(e).reason === "PIN_ID_MISMATCH"), "the pin was refused");
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

  for (const [what, opts] of [["an unknown group", { group: "nope" }], ["a priority over 9", { group: "a", priority: 10 }],
    ["no group of a consumer of two", {}]]) {
    await t.test(`a subscription with ${what} fails on opening`, async () => {
      const sub = client.subscribe("TEST", "groups", async () => {}, { ...opts, onError: () => {} });
      await sub.closed;
      assert.equal(sub.error?.code, 3, `error ${sub.error}`); // INVALID_ARGUMENT: no retry mends it
    });
  }
});
