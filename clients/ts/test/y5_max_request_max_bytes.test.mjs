// A consumer's maxRequestMaxBytes, the limit a Fetch refused
// MESSAGE_TOO_LARGE names: taken at a create, shown by getConsumer, changed
// by an update; a negative one is INVALID_ARGUMENT.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { Client, reasonOf } from "../dist/index.js";
import { startJetgate } from "./harness.mjs";

test("maxRequestMaxBytes through the API", async (t) => {
  const g = await startJetgate([{ name: "file" }], t, { more: 'admin: {streams: ["*"], consumers: ["*"]}\n' });
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());

  const made = await client.createConsumer("TEST", { durableName: "mb", filterSubjects: ["test.mb"], maxRequestMaxBytes: 2048 });
  assert.equal(made.config.maxRequestMaxBytes, 2048);
  assert.equal((await client.getConsumer("TEST", "mb")).config.maxRequestMaxBytes, 2048);
  const u = await client.updateConsumer("TEST", "mb", { maxRequestMaxBytes: 8192 }, "maxRequestMaxBytes");
  assert.equal(u.config.maxRequestMaxBytes, 8192);
  await assert.rejects(client.updateConsumer("TEST", "mb", { maxRequestMaxBytes: -1 }, ["max_request_max_bytes"]), (e) => {
    assert.equal(e.code, Code.InvalidArgument, e.message);
    assert.equal(reasonOf(e).reason, "INVALID_ARGUMENT");
    assert.match(e.message, /max_request_max_bytes/);
    return true;
  });
  assert.equal((await client.getConsumer("TEST", "file")).config.maxRequestMaxBytes, 0);
});
