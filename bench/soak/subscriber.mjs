// A subscriber of the TypeScript library (clients/ts) for the bench's soak
// (bench/soak_libraries.go):
//
//     node subscriber.mjs ADDRESS STREAM CONSUMER
//
// The library is imported from JETGATE_TS (the path of clients/ts/dist/index.js).
// It runs a subscriber (concurrency 8) with a handler that resolves at once,
// so that the library acks every message, until its stdin closes. Every
// second it prints one JSON line, {"handled": N, "failed": M}: handler calls
// finished, and errors the library reported to onError (failed settles, lost
// leases, broken streams). When stdin closes it closes the subscriber (drain,
// 30 s), prints those counts once more, then {"stats": {...}, "errors":
// {kind: count}} and exits 0.
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(process.env.JETGATE_TS).href);
const [address, stream, consumer] = process.argv.slice(2);

let handled = 0;
const errors = {};
const failed = () => Object.values(errors).reduce((a, b) => a + b, 0);
// Writes to a pipe are synchronous on Linux: a line is out before the next.
const emit = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const client = new Client({ address });
const sub = client.subscribe(stream, consumer, async () => { handled++; }, {
  concurrency: 8,
  onError: (e) => { const kind = e?.constructor?.name ?? typeof e; errors[kind] = (errors[kind] ?? 0) + 1; },
});
const ticker = setInterval(() => emit({ handled, failed: failed() }), 1000);
process.stdin.resume();
await new Promise((r) => process.stdin.on("end", r)); // until the bench closes it
await sub.close({ mode: "drain", timeout: 30_000 });
client.close();
clearInterval(ticker);
emit({ handled, failed: failed() });
const stats = Object.fromEntries(Object.entries(sub.stats).filter(([, v]) => typeof v === "number"));
emit({ stats, errors });
