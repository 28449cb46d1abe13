// A real jetgate for the tests: the binary built from this repository,
// started with its embedded NATS server on free ports and a data directory of
// its own, and stopped (or killed and restarted) on demand.

import { spawn, execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { randomBytes } from "node:crypto";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
let built;

// jetgateBinary builds ./cmd/jetgate once per test process (JETGATE_BIN: use
// that binary instead).
export function jetgateBinary() {
  if (process.env.JETGATE_BIN) {
    return Promise.resolve(process.env.JETGATE_BIN);
  }
  built ??= (async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "jetgate-bin-"));
    const bin = path.join(dir, "jetgate");
    await promisify(execFile)("go", ["build", "-o", bin, "./cmd/jetgate"], { cwd: repoRoot, maxBuffer: 1 << 24 });
    return bin;
  })();
  return built;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// waitFor polls cond until it returns a truthy value or ms pass.
export async function waitFor(cond, ms, what = "condition") {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) {
      return v;
    }
    if (Date.now() > end) {
      throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

// consumerYaml is one consumer of the TEST stream, on subject test.<name>;
// extra is more of its fields, as YAML.
function consumerYaml(c) {
  let y = `  - {stream: TEST, name: ${c.name}, ack_wait: ${c.ackWait ?? "2s"}, max_ack_pending: ${c.maxAckPending ?? 10000}, filter_subjects: ["test.${c.name}"]`;
  if (c.maxDeliver) {
    y += `, max_deliver: ${c.maxDeliver}`;
  }
  if (c.extra) {
    y += `, ${c.extra}`; // more fields, as YAML
  }
  return `${y}}\n`;
}

/**
 * startJetgate runs jetgate with the consumers given ({name, ackWait}), each
 * reading subject test.<name> of stream TEST, and opts.more (top-level YAML,
 * e.g. an admin block) in its file. It resolves once /readyz says 200. The
 * result's kill() and start() stop and start the same process again (same
 * ports, data directory and token key). opts.args: more flags (another
 * replica's --nats-url); opts.keyFile: the token key of another replica.
 */
export async function startJetgate(consumers, t, opts = {}) {
  const bin = await jetgateBinary();
  const dir = mkdtempSync(path.join(tmpdir(), "jetgate-ts-"));
  const keyFile = opts.keyFile ?? path.join(dir, "token.key");
  if (!opts.keyFile) {
    writeFileSync(keyFile, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
  }
  const config = path.join(dir, "jetgate.yaml");
  const streams = "streams:\n  - {name: TEST, subjects: [\"test.>\"], allow_msg_ttl: true, allow_atomic: true}\n" +
    "  - {name: DEAD, subjects: [\"dead.>\"]}\n"; // for dead letters
  writeFileSync(config, `${streams}consumers:\n${consumers.map(consumerYaml).join("")}${opts.more ?? ""}`);
  const g = {
    grpc: `127.0.0.1:${await freePort()}`,
    http: `127.0.0.1:${await freePort()}`,
    dir,
    keyFile,
    proc: undefined,
    log: [],
    async start() {
      const args = ["--config", config, "--grpc-addr", g.grpc, "--http-addr", g.http, "--data-dir", path.join(dir, "data"),
        "--token-key-file", keyFile, "--log-level", "warn", ...(opts.args ?? [])];
      const p = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
      p.stderr.on("data", (b) => g.log.push(b.toString()));
      g.proc = p;
      const exited = new Promise((resolve) => p.once("exit", resolve));
      p.exited = exited;
      await waitFor(async () => {
        if (p.exitCode !== null) {
          throw new Error(`jetgate exited with ${p.exitCode}: ${g.log.join("")}`);
        }
        try {
          const res = await fetch(`http://${g.http}/readyz`);
          return res.status === 200;
        } catch {
          return false;
        }
      }, 30_000, "jetgate /readyz");
    },
    async kill(signal = "SIGKILL") {
      const p = g.proc;
      if (p && p.exitCode === null && p.signalCode === null) {
        p.kill(signal);
        await p.exited;
      }
    },
  };
  await g.start();
  t.after(async () => {
    await g.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  return g;
}

// publishN publishes n messages to test.<consumer> and resolves with their sequences.
export async function publishN(client, consumer, n, body = (i) => `m${i}`) {
  const seqs = [];
  for (let i = 0; i < n; i += 200) {
    const part = await Promise.all(
      Array.from({ length: Math.min(200, n - i) }, (_, j) => client.publish("TEST", `test.${consumer}`, body(i + j))),
    );
    seqs.push(...part.map((a) => a.seq));
  }
  return seqs;
}

// state is the consumer's live state from GetConsumer.
export async function state(client, consumer) {
  const info = await client.getConsumer("TEST", consumer);
  return info.state;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
