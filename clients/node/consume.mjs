// consume.mjs shows that a gRPC client other than Go's can use jetgate's
// streaming Consume. It publishes N messages to ORDERS on orders.node, opens
// a Consume stream on the billing consumer, acks every batch it is handed,
// and once it has all N cancels the stream and prints one JSON line:
//
//   {"received":N,"acked":N,"heartbeats":H}
//
// Usage: node consume.mjs HOST:PORT N
//
// Any error, or not being done within 20s, prints the error and exits 1.

import { fileURLToPath } from "node:url";
import path from "node:path";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const STREAM = "ORDERS";
const CONSUMER = "billing";
const SUBJECT = "orders.node";
const MAX_MESSAGES = 10;
const OVERALL_TIMEOUT_MS = 20_000;
const CALL_TIMEOUT_MS = 5_000;

function fail(err) {
  const msg = err instanceof Error ? err.stack || err.message : String(err);
  process.stderr.write(`consume.mjs: ${msg}\n`, () => process.exit(1));
}

const timer = setTimeout(
  () => fail(new Error(`timed out after ${OVERALL_TIMEOUT_MS / 1000}s`)),
  OVERALL_TIMEOUT_MS,
);

function loadServices() {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const protoRoot = path.resolve(here, "..", "..", "proto");
  // stream.proto imports "jetgate/v1/consumer.proto", so the include root is
  // proto/. proto-loader brings the Google well-known types (Duration,
  // Timestamp) with it.
  const def = protoLoader.loadSync(
    ["jetgate/v1/consumer.proto", "jetgate/v1/stream.proto"],
    {
      includeDirs: [protoRoot],
      keepCase: false,
      longs: String,
      enums: String,
      bytes: Buffer,
      defaults: true,
      oneofs: true,
    },
  );
  return grpc.loadPackageDefinition(def).jetgate.v1;
}

function deadline() {
  return new Date(Date.now() + CALL_TIMEOUT_MS);
}

// unary turns a callback-style unary call into a promise.
function unary(client, method, req) {
  return new Promise((resolve, reject) => {
    client[method](req, { deadline: deadline() }, (err, res) => {
      if (err) reject(new Error(`${method}: ${err.code} ${err.details || err.message}`));
      else resolve(res);
    });
  });
}

async function main() {
  const [addr, nArg] = process.argv.slice(2);
  const n = Number(nArg);
  if (!addr || !Number.isInteger(n) || n < 1) {
    throw new Error("usage: node consume.mjs HOST:PORT N (N >= 1)");
  }

  const v1 = loadServices();
  const creds = grpc.credentials.createInsecure();
  const streams = new v1.StreamService(addr, creds);
  const consumers = new v1.ConsumerService(addr, creds);

  for (let i = 0; i < n; i++) {
    const res = await unary(streams, "Publish", {
      stream: STREAM,
      subject: SUBJECT,
      data: Buffer.from(`node ${i}`),
    });
    if (res.duplicate) throw new Error(`publish ${i}: stored as a duplicate`);
  }

  const result = await new Promise((resolve, reject) => {
    let received = 0;
    let acked = 0;
    let heartbeats = 0;
    let done = false;

    const call = consumers.Consume({
      stream: STREAM,
      consumer: CONSUMER,
      maxMessages: MAX_MESSAGES,
      heartbeat: { seconds: 1, nanos: 0 },
    });

    const finish = (err) => {
      if (done) return;
      done = true;
      call.cancel();
      if (err) reject(err);
      else resolve({ received, acked, heartbeats });
    };

    call.on("data", (res) => {
      if (done) return;
      const msgs = res.messages || [];
      if (msgs.length === 0) {
        heartbeats++;
        return;
      }
      const tokens = [];
      for (const m of msgs) {
        if (!m.token) return finish(new Error(`message ${received} has no token`));
        if (m.subject !== SUBJECT) {
          return finish(new Error(`message ${received} on subject ${m.subject}; want ${SUBJECT}`));
        }
        const delivered = Number(m.metadata?.numDelivered);
        if (delivered !== 1) {
          return finish(new Error(`message ${received} delivered ${delivered} times; want 1`));
        }
        tokens.push(m.token);
        received++;
      }
      if (received > n) return finish(new Error(`received ${received} messages; want ${n}`));
      unary(consumers, "Ack", { stream: STREAM, consumer: CONSUMER, tokens }).then(
        (ack) => {
          const failures = ack.failures || [];
          if (failures.length > 0) {
            const f = failures[0];
            return finish(new Error(`ack: ${failures.length} of ${tokens.length} failed, first ${f.reason}: ${f.message}`));
          }
          acked += tokens.length;
          if (acked === n) finish();
        },
        finish,
      );
    });
    call.on("error", (err) => {
      // Our own cancel ends the stream with CANCELLED; anything else fails.
      finish(new Error(`Consume: ${err.code} ${err.details || err.message}`));
    });
    call.on("end", () => finish(new Error(`Consume ended after ${received} of ${n} messages`)));
  });

  streams.close();
  consumers.close();
  return result;
}

main().then(
  (result) => {
    clearTimeout(timer);
    process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
  },
  fail,
);
