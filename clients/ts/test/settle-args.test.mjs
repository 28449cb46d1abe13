// What a settle's arguments mean, against a real jetgate (an adopter's
// findings): DESIGN 14 gives TypeScript "an options object for the optional
// ones", so term takes { reason } as well as the README's string; an argument
// of another shape, or an extend's duration that rounds to 0, is refused
// before anything is sent, never bent into another settle.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, SettleError } from "../dist/index.js";
import { startJetgate, publishN, waitFor } from "./harness.mjs";

const invalidArgument = 3; // connect's Code.InvalidArgument

test("settle arguments", async (t) => {
  const g = await startJetgate([
    { name: "termopts", ackWait: "30s", extra: "dead_letter: {subject: dead.termopts, on_term: true}" },
    { name: "nakshape", ackWait: "30s" },
    { name: "tiny", ackWait: "30s" },
  ], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());

  await t.test("term({ reason }) terminates with that reason, as term(reason) does", async () => {
    await publishN(client, "termopts", 2);
    const [a, b] = await client.fetch("TEST", "termopts", { batch: 2, expires: 2_000 });
    await a.term("as a string");
    await b.term({ reason: "as options" });
    let reasons = [];
    await waitFor(async () => {
      const page = await client.listDeadLetters("TEST", "termopts");
      reasons = page.deadLetters.map((d) => d.headers["Jetgate-Dead-Term-Reason"]?.[0]).sort();
      return reasons.length === 2;
    }, 10_000, "two dead letters");
    assert.deepEqual(reasons, ["as a string", "as options"]);
  });

  await t.test("nak(ms) and a delay that is not a number are refused, nothing sent", async () => {
    await publishN(client, "nakshape", 1);
    const [m] = await client.fetch("TEST", "nakshape", { expires: 2_000 });
    await assert.rejects(m.nak(2_000), RangeError);
    await assert.rejects(m.nak({ delay: Number.NaN }), RangeError);
    await assert.rejects(m.nak({ delay: -5_000 }), RangeError); // the gateway refuses it; it was sent as 0
    await assert.rejects(m.term(42), RangeError);
    // Nothing was sent: the lease is still ours to settle another way.
    await m.nak({ delay: 2_000 });
    const t0 = Date.now();
    const [again] = await client.fetch("TEST", "nakshape", { expires: 5_000 });
    assert.ok(again && Date.now() - t0 >= 1_500, `redelivered after ${Date.now() - t0}ms, the delay asked was 2000`);
    await again.ack();
  });

  await t.test("an extend by a duration that rounds to 0, or is negative, does not give the message back", async () => {
    await publishN(client, "tiny", 1);
    const [m] = await client.fetch("TEST", "tiny", { expires: 2_000 });
    for (const duration of [0.4, -0.4, -5]) {
      await assert.rejects(m.extend({ duration }), (e) => e instanceof SettleError && e.code === invalidArgument, `duration ${duration}`);
    }
    assert.deepEqual(await client.fetch("TEST", "tiny", { expires: 500 }), [], "the message was given back");
    await m.ack();
  });
});
