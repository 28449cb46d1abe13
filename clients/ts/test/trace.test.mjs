// W3C trace context flows from a message's headers into its handler when
// @opentelemetry/api is installed and a propagator is registered.

import { test } from "node:test";
import assert from "node:assert/strict";
import { context, propagation, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { Client } from "../dist/index.js";
import { startJetgate, waitFor } from "./harness.mjs";

test("the handler runs in the trace context of the message's traceparent", async (t) => {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const g = await startJetgate([{ name: "traced" }], t);
  const client = new Client({ address: g.grpc });
  t.after(() => client.close());
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  await client.publish("TEST", "test.traced", "x", { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
  let seen;
  const sub = client.subscribe("TEST", "traced", async () => {
    await new Promise((r) => setImmediate(r)); // still in context after an await
    seen = trace.getSpanContext(context.active());
  });
  await waitFor(() => sub.stats.acked === 1, 10_000, "the ack");
  await sub.close();
  assert.equal(seen?.traceId, traceId);
  assert.equal(seen?.isRemote, true);
});
