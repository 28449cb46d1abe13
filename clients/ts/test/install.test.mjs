// The README's install, both ways, as written: from an empty project folder
// beside a copy of the checkout's files (no node_modules, as a fresh clone
// has), `npm install --install-links ../jetgate/clients/ts`, and `npm pack`
// then `npm install` of the tarball; each project then runs the README's
// quickstart against a real jetgate started as the README starts it.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { jetgateBinary, waitFor } from "./harness.mjs";

const run = promisify(execFile);
const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const readme = readFileSync(path.join(pkgDir, "README.md"), "utf8");

// env is the environment without what `npm test` sets for its own package.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith("npm_")));

function quickstart() {
  const at = readme.indexOf("\n## Fifteen lines\n");
  const m = /^```js\n([\s\S]*?)^```$/m.exec(readme.slice(at));
  assert.ok(at >= 0 && m, "the README's quickstart block");
  return m[1];
}

// checkoutCopy copies the package's files as a clone has them: tracked and
// not ignored, so no node_modules.
async function checkoutCopy(dir) {
  const { stdout } = await run("git", ["ls-files", "-co", "--exclude-standard", "-z", "."], { cwd: pkgDir, maxBuffer: 1 << 24 });
  for (const f of stdout.split("\0").filter(Boolean)) {
    const from = path.join(pkgDir, f);
    if (existsSync(from)) {
      mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      cpSync(from, path.join(dir, f));
    }
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// withJetgate runs fn(grpcAddress) against `jetgate --ack-wait 2s` on its
// embedded defaults (ORDERS, billing), on free ports and a data dir of its own.
async function withJetgate(dir, fn) {
  const grpc = `127.0.0.1:${await freePort()}`;
  const http = `127.0.0.1:${await freePort()}`;
  const log = [];
  const p = spawn(await jetgateBinary(), ["--ack-wait", "2s", "--grpc-addr", grpc, "--http-addr", http, "--data-dir", path.join(dir, "data")],
    { stdio: ["ignore", "ignore", "pipe"] });
  p.stderr.on("data", (b) => log.push(b.toString()));
  const exited = new Promise((resolve) => p.once("exit", resolve));
  try {
    await waitFor(async () => {
      if (p.exitCode !== null) {
        throw new Error(`jetgate exited with ${p.exitCode}: ${log.join("")}`);
      }
      try {
        return (await fetch(`http://${http}/readyz`)).status === 200;
      } catch {
        return false;
      }
    }, 30_000, "jetgate /readyz");
    return await fn(grpc);
  } finally {
    p.kill("SIGTERM");
    await exited;
  }
}

async function npm(cwd, ...args) {
  return run("npm", [...args, "--no-audit", "--no-fund"], { cwd, env, timeout: 300_000, maxBuffer: 1 << 24 });
}

// checkInstalled runs the quickstart in project against a real jetgate and
// checks what the README says it prints.
async function checkInstalled(project) {
  const installed = path.join(project, "node_modules", "@jetgate", "client");
  assert.ok(!lstatSync(installed).isSymbolicLink(), "installed as a link, not as a package");
  for (const dep of ["@connectrpc/connect", "@connectrpc/connect-node", "@bufbuild/protobuf"]) {
    assert.ok(existsSync(path.join(project, "node_modules", dep, "package.json")), `${dep} not installed`);
  }
  writeFileSync(path.join(project, "quickstart.mjs"), quickstart());
  const { stdout } = await withJetgate(project, (addr) =>
    run(process.execPath, ["quickstart.mjs", addr], { cwd: project, env, timeout: 60_000 }));
  const lines = stdout.split("\n");
  const deliveries = (text) => lines.filter((l) => new RegExp(`^#\\d+ ${text}, delivery \\d+$`).test(l)).map((l) => Number(l.split(" ").at(-1)));
  assert.deepEqual(deliveries("hello"), [1], stdout);
  assert.deepEqual(deliveries("slow"), [1], stdout); // extended, never redelivered
  assert.deepEqual(deliveries("flaky"), [1, 2, 3], stdout);
  const extended = Number(/extended: (\d+)/.exec(stdout)?.[1]);
  assert.ok(extended >= 1, `extended ${extended} in:\n${stdout}`);
}

test("the README's installs, in empty folders, each running the quickstart", { timeout: 600_000 }, async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "jetgate-install-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await checkoutCopy(path.join(dir, "jetgate", "clients", "ts"));
  assert.ok(!existsSync(path.join(dir, "jetgate", "clients", "ts", "node_modules")));
  assert.ok(readFileSync(path.join(pkgDir, "examples", "quickstart.mjs"), "utf8").endsWith(quickstart()),
    "examples/quickstart.mjs is not the README's quickstart");

  await t.test("npm install --install-links of the folder", async () => {
    assert.ok(readme.includes("cd your-project && npm install --install-links ../jetgate/clients/ts"));
    const project = path.join(dir, "by-path");
    mkdirSync(project);
    await npm(project, "init", "-y");
    await npm(project, "install", "--install-links", "../jetgate/clients/ts");
    await checkInstalled(project);
  });

  await t.test("npm pack, then npm install of the tarball", async () => {
    assert.ok(readme.includes("cd your-project && npm pack ../jetgate/clients/ts && npm install ./jetgate-client-0.1.0.tgz"));
    const project = path.join(dir, "by-tarball");
    mkdirSync(project);
    await npm(project, "init", "-y");
    await npm(project, "pack", "../jetgate/clients/ts");
    await npm(project, "install", "./jetgate-client-0.1.0.tgz");
    await checkInstalled(project);
  });
});
