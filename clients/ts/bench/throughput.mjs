// Throughput of a subscriber with a no-op handler: publishes N messages of
// SIZE bytes to a jetgate, then times one subscriber (maxMessages M) from
// subscribe until every message is acked.
//
// Usage: node bench/throughput.mjs [N=30000] [SIZE=1024] [M=500]
// (JETGATE_BIN: the jetgate binary; else ./cmd/jetgate is built)
import { Client } from "../dist/index.js";
import { startJetgate, waitFor, publishN } from "../test/harness.mjs";

const [n = 30_000, size = 1024, maxMessages = 500] = process.argv.slice(2).map(Number);
const cleanups = [];
const g = await startJetgate([{ name: "bench", ackWait: "30s" }], { after: (f) => cleanups.push(f) });
const client = new Client({ address: g.grpc });
try {
  const body = "x".repeat(size);
  await publishN(client, "bench", n, () => body);
  const began = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const sub = client.subscribe("TEST", "bench", () => undefined, { maxMessages });
  await waitFor(() => sub.stats.acked === n, 300_000, `${n} acks`);
  const secs = Number(process.hrtime.bigint() - began) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  await sub.close();
  console.log(JSON.stringify({
    messages: n, size, maxMessages, seconds: +secs.toFixed(2), msgPerSec: Math.round(n / secs),
    clientCpuSecPer100k: +(((cpu.user + cpu.system) / 1e6) * (100_000 / n)).toFixed(2),
    settleFailures: sub.stats.settleFailures,
  }));
} finally {
  client.close();
  for (const f of cleanups) await f();
}
