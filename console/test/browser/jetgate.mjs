// A real jetgate for the browser tests: the binary built from this
// checkout, its embedded NATS server in a data directory of its own, its
// listeners on free ports (it reports the ones it bound in its log), auth
// on with API keys for an operator, a worker, a read-only principal and one
// whose name carries a right-to-left override; an admin block lets the
// operator create consumers on REPLAY.
import { spawn, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const OPERATOR_KEY = "operator-key-for-the-console-test";
export const WORKER_KEY = "worker-key-for-the-console-test";
export const READER_KEY = "reader-key-for-the-console-test"; // read on ORDERS/billing, nothing else
export const EVE_KEY = "eve-key-for-the-console-test"; // fetch and settle, as "eve\u202Eresu"
/** A consumer whose name reads "billing" where the override is obeyed. */
export const BIDI_CONSUMER = "\u202Egnillib";

const sha = (s) => createHash("sha256").update(s).digest("hex");

export function buildJetgate(dir) {
  const bin = join(dir, "jetgate");
  const root = resolve(import.meta.dirname, "../../..");
  execFileSync("go", ["build", "-o", bin, "./cmd/jetgate"], { cwd: root, stdio: "inherit" });
  return bin;
}

export async function startJetgate() {
  const dir = mkdtempSync(join(tmpdir(), "jetgate-console-"));
  const bin = process.env.JETGATE_BIN || buildJetgate(dir);
  const cfg = join(dir, "jetgate.yaml");
  writeFileSync(cfg, `
embedded: {data_dir: ${JSON.stringify(join(dir, "data"))}}
listen: {grpc: "127.0.0.1:0", http: "127.0.0.1:0"}
streams:
  - {name: ORDERS, subjects: ["orders.>"]}
  - {name: DLQ, subjects: ["dlq.>"]}
  - {name: REPLAY, subjects: ["replay.>"]}
consumers:
  - stream: ORDERS
    name: billing
    ack_wait: 30s
    max_deliver: 5
    dead_letter: {subject: dlq.billing, on_term: true}
  - {stream: ORDERS, name: pinned, priority_groups: [jobs], priority_policy: pinned_client, priority_timeout: 2m}
  - {stream: ORDERS, name: "\\u202Egnillib"}
  - {stream: REPLAY, name: audit, filter_subjects: [replay.audit]}  # a stream the gateway serves: callers publish to it
auth:
  api_keys:
    - {principal: operator, sha256: ${sha(OPERATOR_KEY)}}
    - {principal: worker, sha256: ${sha(WORKER_KEY)}}
    - {principal: reader, sha256: ${sha(READER_KEY)}}
    - {principal: "eve\\u202Eresu", sha256: ${sha(EVE_KEY)}}
  grants:
    - {principal: operator, stream: "*", consumers: ["*"], actions: [read, manage, redrive, publish, seek, admin]}
    - {principal: worker, stream: ORDERS, consumers: [billing, pinned], actions: [fetch, settle, publish]}
    - {principal: worker, stream: REPLAY, consumers: ["*"], actions: [fetch, settle, publish]}
    - {principal: reader, stream: ORDERS, consumers: [billing], actions: [read]}
    - {principal: "eve\\u202Eresu", stream: ORDERS, consumers: [billing], actions: [fetch, settle, publish]}
admin: {streams: [REPLAY], consumers: ["*"]}
`);
  const child = spawn(bin, ["--config", cfg], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const base = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`jetgate did not serve within 60s:\n${log}`)), 60_000);
    const onData = (b) => {
      log += b.toString();
      const m = /jetgate serving.*?http=(\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        ok(`http://${m[1]}`);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`jetgate exited with ${code}:\n${log}`));
    });
  });
  const api = async (key, method, path, body) => {
    const res = await fetch(base + path, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { base, api, stop, log: () => log };
}
