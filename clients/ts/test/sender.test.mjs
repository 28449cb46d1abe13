// The settle sender's retry of a token the gateway answered UNAVAILABLE for
// in a call's failures (NATS failed under that one settle). A real jetgate
// answers so only when NATS fails in the middle of a settle, which no test
// can time, so the sender's rule is tested on its own here, with a stand-in
// for the API's answers; everything else runs against a real jetgate.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { Sender } from "../dist/sender.js";

// answers is an API whose ack answers each call with the next failures.
function answers(...failures) {
  const api = { calls: 0 };
  api.ack = async () => ({ failures: failures[api.calls++] ?? [] });
  return api;
}

test("a token answered UNAVAILABLE is sent again, and idle waits for it", async () => {
  const api = answers([{ index: 0, code: Code.Unavailable, reason: "NATS_UNAVAILABLE", message: "" }]);
  const s = new Sender(api, 100, 1);
  let done = false;
  const acked = s.send("S", "C", "ack", "tok", Date.now() + 30_000).then(() => (done = true));
  await s.idle(); // what a drain close waits for before it ends the stream
  assert.ok(done, `idle resolved before the ack was confirmed (${api.calls} calls)`);
  await acked;
  assert.equal(api.calls, 2);
});

test("a token answered otherwise is not sent again", async () => {
  const api = answers([{ index: 0, code: Code.FailedPrecondition, reason: "LEASE_SETTLED", message: "" }]);
  const s = new Sender(api, 100, 1);
  await assert.rejects(s.send("S", "C", "ack", "tok", Date.now() + 30_000), { reason: "LEASE_SETTLED" });
  assert.equal(api.calls, 1);
});

test("a token answered UNAVAILABLE until its lease ends is rejected, saying it may have taken", async () => {
  const unavailable = [{ index: 0, code: Code.Unavailable, reason: "NATS_UNAVAILABLE", message: "" }];
  const api = answers(...Array(50).fill(unavailable));
  const s = new Sender(api, 100, 1);
  await assert.rejects(s.send("S", "C", "ack", "tok", Date.now() + 500), (err) => err.reason === "NATS_UNAVAILABLE" && /may have taken/.test(err.message));
});
