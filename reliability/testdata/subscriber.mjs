// A subscriber of the TypeScript library (clients/ts) for the fault suite's
// libraries-in-the-loop scenario (reliability/libraries_test.go).
//
//     node subscriber.mjs ADDRESS STREAM CONSUMER LOG ACK_WAIT_MS
//
// The library is imported from JETGATE_TS (the path of clients/ts/dist/index.js).
// It runs a subscriber (concurrency 8) until its stdin closes, then closes it
// (drain) and exits. Handlers run for a random time (some past ack_wait: the
// subscriber extends them), some throw (nak'ed), and the rest ack their
// message themselves, so that an ack confirmed is known. Each handler writes
// one JSON line when it starts and one when it ends, in the order they
// happen: {"ev": "start"|"end", "seq", "delivery", "t" (unix ms), "outcome"} with outcome
// "acked", "ack_failed" (with the failure's reason and detail) or "raised" on "end".
import fs from "node:fs";
import { pathToFileURL } from "node:url";

const { Client, SettleError } = await import(pathToFileURL(process.env.JETGATE_TS).href);
const [address, stream, consumer, logPath, ackWaitText] = process.argv.slice(2);
const ackWait = Number(ackWaitText);
const fd = fs.openSync(logPath, "a");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function record(ev, m, extra = {}) {
  const line = { ev, seq: Number(m.metadata.streamSeq), delivery: Number(m.metadata.numDelivered), t: Date.now(), ...extra };
  fs.writeSync(fd, JSON.stringify(line) + "\n");
}

async function handle(m) {
  record("start", m);
  const p = Math.random(), q = Math.random();
  const long = p < 0.02 || (Number(m.metadata.streamSeq) % 37 === 0 && Number(m.metadata.numDelivered) === 1);
  if (long) await sleep(ackWait + 200 + 1000 * q); // past ack_wait: extended meanwhile
  else if (p < 0.15) await sleep(50 + 400 * q);
  else await sleep(20 * q);
  if (Number(m.metadata.numDelivered) < 3 && Math.random() < 0.1) {
    record("end", m, { outcome: "raised" });
    throw new Error("raised by design");
  }
  try {
    await m.ack();
  } catch (e) {
    if (!(e instanceof SettleError)) throw e;
    record("end", m, { outcome: "ack_failed", reason: e.reason, detail: e.message });
    return;
  }
  record("end", m, { outcome: "acked" });
}

const errors = {};
const client = new Client({ address });
const sub = client.subscribe(stream, consumer, handle, {
  maxMessages: 16, concurrency: 8, retry: { min: 100, max: 1000 },
  onError: (e) => { errors[e.constructor.name] = (errors[e.constructor.name] ?? 0) + 1; },
});
process.stdin.resume();
await new Promise((r) => process.stdin.on("end", r)); // until the test closes it
await sub.close({ mode: "drain", timeout: 30_000 });
client.close();
const stats = Object.fromEntries(Object.entries(sub.stats).filter(([, v]) => typeof v === "number"));
console.log(JSON.stringify({ stats, errors }));
fs.closeSync(fd);
