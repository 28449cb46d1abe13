// Against `go run ./cmd/jetgate --ack-wait 2s` (ORDERS, consumer billing): one message handled,
// a slow one extended past ack_wait, a failing one retried. Run: node examples/quickstart.mjs [ADDRESS]
import { Client } from "@jetgate/client";

const client = new Client({ address: process.argv[2] ?? "127.0.0.1:9090" });
for (const text of ["hello", "slow", "flaky"]) await client.publish("ORDERS", "orders.demo", text);

const sub = client.subscribe("ORDERS", "billing", async (m) => {
  const text = new TextDecoder().decode(m.data);
  console.log(`#${m.metadata.streamSeq} ${text}, delivery ${m.metadata.numDelivered}`);
  if (text === "slow") await new Promise((r) => setTimeout(r, 5_000)); // longer than ack_wait: extended
  if (text === "flaky" && m.metadata.numDelivered < 3) throw new Error("not yet"); // nak'ed, retried later
}, { maxMessages: 10, retry: { min: 500 }, onError: (e) => console.log(`  ${e.message}`) });

await new Promise((r) => setTimeout(r, 8_000));
await sub.close({ mode: "drain" });
console.log(sub.stats);
client.close();
