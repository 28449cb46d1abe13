// The console in a real browser: Debian's Chromium, headless, driven by
// playwright-core against a real jetgate (test/browser/jetgate.mjs). A
// screenshot of each page goes to console/artifacts/.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";
import { BIDI_CONSUMER, EVE_KEY, OPERATOR_KEY, READER_KEY, WORKER_KEY, startJetgate } from "./jetgate.mjs";

const artifacts = resolve(import.meta.dirname, "../../artifacts");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

let jg, browser, profile; // browser: a persistent context, on a fresh profile
const problems = []; // script errors and console errors the page had

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  jg = await startJetgate();
  profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  await jg?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function openPage(viewport) {
  const page = await browser.newPage();
  await page.setViewportSize(viewport);
  page.on("pageerror", (e) => problems.push(`script error: ${e.message}`));
  page.on("console", (m) => {
    // A 401 or 4xx answer is logged by the browser as a failed resource;
    // anything else in red (a CSP refusal, an exception) is a problem.
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  return page;
}

/** A page signed in from the start (the key in the tab's session before any script runs): no 401 to sign in. */
async function signedIn(key, viewport) {
  const page = await openPage(viewport);
  await page.addInitScript((k) => sessionStorage.setItem("jetgate.credential", k), key);
  return page;
}

/** Every request of the page that failed or was answered with a status of 400 or more, as it happens. */
function failedRequests(page) {
  const failed = [];
  page.on("requestfailed", (r) => failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) failed.push(`${r.request().method()} ${r.url()}: ${r.status()}`);
  });
  return failed;
}

/** How many times the page was shown whole (main's data-loads): each refresh adds one. */
async function loads(page) {
  return Number(await page.locator("#main").getAttribute("data-loads") ?? 0);
}

async function shot(page, name) {
  const path = join(artifacts, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: ${path}`);
}

async function confirmIn(page, name) {
  const dialog = page.locator("dialog[open]");
  await dialog.waitFor();
  await dialog.getByRole("button", { name, exact: true }).click();
  await dialog.waitFor({ state: "detached" }).catch(() => {});
  await page.locator("dialog[open]").waitFor({ state: "hidden" });
}

async function until(what, cond, ms = 15_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const consumerPath = "/v1/streams/ORDERS/consumers/billing";

test("the console shows billing, its leases and dead letters, and pauses, resumes and redrives it", async () => {
  const res = await fetch(`${jg.base}/console/`);
  assert.equal(res.status, 200);
  const csp = res.headers.get("content-security-policy");
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline/);

  // Six messages; the worker leases three and terminates one (a dead letter).
  for (let i = 0; i < 6; i++) {
    await jg.api(WORKER_KEY, "POST", "/v1/streams/ORDERS:publish", { subject: "orders.new", data: btoa(`order ${i}`) });
  }
  const fetched = await jg.api(WORKER_KEY, "POST", `${consumerPath}:fetch`, { batch: 3, expires: "2s" });
  assert.equal(fetched.messages.length, 3);
  await jg.api(WORKER_KEY, "POST", `${consumerPath}:term`, { tokens: [fetched.messages[0].token], reason: "bad order" });
  // One of the two still held is kept alive for ten minutes.
  const kept = await jg.api(WORKER_KEY, "POST", `${consumerPath}:extend`, { tokens: [fetched.messages[1].token], duration: "600s" });
  assert.equal(kept.leases.length, 1);
  await until("the dead letter", async () => (await jg.api(OPERATOR_KEY, "GET", consumerPath)).deadLetters === "1");

  const page = await openPage({ width: 1280, height: 800 });
  await page.goto(`${jg.base}/console/`);
  // Auth is on: the page asks for a key, and keeps it in the tab only.
  await page.getByLabel("API key or token").fill(OPERATOR_KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  const row = page.locator('tr[data-consumer="billing"]');
  await row.waitFor();
  assert.equal(await row.locator('[data-metric="pending"] .value').textContent(), "3");
  assert.equal(await row.locator('[data-metric="ackPending"] .value').textContent(), "2");
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("jetgate.credential")), OPERATOR_KEY);
  await shot(page, "overview-1280x800");

  await row.getByRole("link", { name: "billing" }).click();
  const lease = page.locator('#leases-body tr[data-principal="worker"]');
  await lease.waitFor();
  assert.match(await lease.textContent(), /worker\s*2/);
  // Its latest deadline, the one asked for: a time, and how far off it is.
  const latest = lease.locator('[data-field="latest-deadline"]');
  assert.equal(await latest.locator("time").getAttribute("datetime"), kept.leases[0].leaseDeadline);
  assert.match(await latest.textContent(), /in (9m \d+s|10m 0s)$/);
  assert.equal(await lease.locator('[data-field="kept"]').textContent(), "1");
  await page.locator('#dead-body tr[data-seq]').first().waitFor();
  await shot(page, "consumer-1280x800");

  // Pause: confirmed, then the server says paused.
  await page.getByRole("button", { name: "Pause", exact: true }).click();
  await confirmIn(page, "Pause");
  await until("paused", async () => (await jg.api(OPERATOR_KEY, "GET", consumerPath)).state.paused === true);
  await page.getByText("Paused: delivers again in").waitFor();
  await shot(page, "consumer-paused-1280x800");

  // Resume, likewise; a canceled confirmation does nothing.
  await page.getByRole("button", { name: "Resume", exact: true }).click();
  await confirmIn(page, "Cancel");
  assert.equal((await jg.api(OPERATOR_KEY, "GET", consumerPath)).state.paused, true);
  await page.getByRole("button", { name: "Resume", exact: true }).click();
  await confirmIn(page, "Resume");
  await until("resumed", async () => !(await jg.api(OPERATOR_KEY, "GET", consumerPath)).state.paused);

  // Redrive the selected dead letter: back on orders.new, one more pending.
  const before = Number((await jg.api(OPERATOR_KEY, "GET", consumerPath)).state.numPending);
  await page.locator('#dead-body tr[data-seq] input[type="checkbox"]').first().check();
  await page.getByRole("button", { name: "Redrive", exact: true }).click();
  await confirmIn(page, "Redrive");
  await until("redriven", async () => {
    const c = await jg.api(OPERATOR_KEY, "GET", consumerPath);
    return (c.deadLetters ?? "0") === "0" && Number(c.state.numPending) === before + 1;
  });
  await page.getByText("No dead letters.").waitFor();
  await page.close();
  assert.deepEqual(problems, []);
});

test("Unpin releases a pinned group's client", async () => {
  const path = "/v1/streams/ORDERS/consumers/pinned";
  await jg.api(WORKER_KEY, "POST", "/v1/streams/ORDERS:publish", { subject: "orders.pin", data: btoa("pin") });
  const got = await jg.api(WORKER_KEY, "POST", `${path}:fetch`, { batch: 1, expires: "2s", group: "jobs" });
  assert.ok(got.pinId, "the fetch was not pinned");
  const pinned = async () => (await jg.api(OPERATOR_KEY, "GET", path)).state.priorityGroups?.[0]?.pinned === true;
  await until("pinned", pinned);
  const page = await openPage({ width: 1280, height: 800 });
  await page.goto(`${jg.base}/console/`);
  await page.getByLabel("API key or token").fill(OPERATOR_KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator('tr[data-consumer="pinned"] a').click();
  const unpin = page.getByRole("button", { name: "Unpin", exact: true });
  await until("the Unpin button enabled", () => unpin.isEnabled());
  await shot(page, "consumer-pinned-1280x800");
  await unpin.click();
  await confirmIn(page, "Unpin");
  await until("unpinned", async () => !(await pinned()));
  await page.close();
  assert.deepEqual(problems, []);
});

test("the keyboard reaches every action, and the consumer page reads on a phone", async () => {
  const page = await openPage({ width: 390, height: 844 });
  await page.goto(`${jg.base}/console/`);
  await page.getByLabel("API key or token").fill(OPERATOR_KEY);
  await page.keyboard.press("Enter");
  await page.locator('tr[data-consumer="billing"]').waitFor();
  await shot(page, "overview-phone");
  await page.goto(`${jg.base}/console/#/streams/ORDERS/consumers/billing`);
  await page.locator("#leases-body table, #leases-body p").first().waitFor();
  const reached = new Set();
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press("Tab");
    const name = await page.evaluate(() => {
      const el = document.activeElement;
      return el && el.tagName === "BUTTON" ? el.textContent : null;
    });
    if (name) reached.add(name);
  }
  for (const name of ["Pause", "Resume"]) assert.ok(reached.has(name), `Tab never reached ${name}: ${[...reached]}`);
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= 390 + 1, `the page is ${wide}px wide on a 390px screen`);
  await shot(page, "consumer-phone");
  // Signing out forgets the key.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("API key or token").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("jetgate.credential")), null);
  await page.close();
  assert.deepEqual(problems, []);
});

test("a consumer without a dead letter: the page asks for none, and no request fails", async () => {
  const page = await signedIn(OPERATOR_KEY, { width: 1280, height: 800 });
  const failed = failedRequests(page);
  const asked = [];
  page.on("request", (r) => asked.push(r.url()));
  await page.goto(`${jg.base}/console/`);
  await page.locator('tr[data-consumer="pinned"] a').click();
  await page.getByText("No dead-letter subject is configured for this consumer.").waitFor();
  const n = await loads(page);
  await until("the next refresh", async () => (await loads(page)) > n);
  assert.deepEqual(failed, []);
  assert.deepEqual(asked.filter((u) => u.includes("/deadLetters")), []);
  // billing has one configured: it is asked for there, and that succeeds.
  await page.evaluate(() => { location.hash = "#/streams/ORDERS/consumers/billing"; });
  await page.locator("#dead-body p.meta").waitFor();
  assert.ok(asked.some((u) => u.includes("/consumers/billing/deadLetters")), "billing's dead letters were not asked for");
  assert.deepEqual(failed, []);
  await page.close();
  assert.deepEqual(problems, []);
});

test("a read-only principal's Pause: the 403 stays on the page through refreshes until dismissed", async () => {
  const page = await signedIn(READER_KEY, { width: 1280, height: 800 });
  await page.goto(`${jg.base}/console/#/streams/ORDERS/consumers/billing`);
  await page.locator("#main .figure").first().waitFor();
  await page.getByRole("button", { name: "Pause", exact: true }).click();
  await confirmIn(page, "Pause");
  const notice = page.locator("#notices .notice");
  await notice.waitFor();
  const said = await notice.locator("p").textContent();
  assert.match(said, /^Pause of ORDERS \/ billing failed: HTTP 403 Forbidden: \S/);
  // The action's own refresh, then one of the page's own (every 5 s): the error stays.
  const n = await loads(page);
  await until("a periodic refresh", async () => (await loads(page)) >= n + 2);
  assert.equal(await notice.count(), 1);
  assert.equal(await notice.locator("p").textContent(), said);
  assert.ok(!(await jg.api(OPERATOR_KEY, "GET", consumerPath)).state.paused, "a reader paused billing");
  await shot(page, "consumer-action-error-1280x800");
  await page.getByRole("button", { name: /^Dismiss/ }).click();
  await notice.waitFor({ state: "detached" });
  assert.equal(await page.locator("#notices .notice").count(), 0);
  await page.close();
  assert.deepEqual(problems, []);
});

test("a consumer that fails to load shows why, and nothing of the one shown before", async () => {
  // The operator to a consumer that does not exist; the reader to one it may not read.
  for (const [key, to, status] of [[OPERATOR_KEY, "nosuch", /HTTP 404 Not Found: \S/], [READER_KEY, "pinned", /HTTP 40[34] [A-Za-z ]+: \S/]]) {
    const page = await signedIn(key, { width: 1280, height: 800 });
    await page.goto(`${jg.base}/console/#/streams/ORDERS/consumers/billing`);
    await page.locator("#main .figure").first().waitFor();
    await page.getByRole("button", { name: "Pause", exact: true }).waitFor();
    await page.evaluate((c) => { location.hash = `#/streams/ORDERS/consumers/${c}`; }, to);
    const why = page.locator("#load-error");
    await why.waitFor();
    assert.match(await why.textContent(), status);
    assert.match(await page.locator("#main h1").textContent(), new RegExp(`^${to} · ORDERS$`));
    assert.equal(await page.locator("#main .figure, #main section, #main table").count(), 0);
    assert.equal(await page.locator("#main button, #main input").count(), 0);
    for (const name of ["Pause", "Resume", "Redrive", "Unpin"]) {
      assert.equal(await page.getByRole("button", { name, exact: true }).count(), 0, `${name} is still shown`);
    }
    await shot(page, `consumer-failed-${to}-1280x800`);
    // Back to billing: it is shown whole again.
    await page.evaluate(() => { location.hash = "#/streams/ORDERS/consumers/billing"; });
    await page.getByRole("button", { name: "Pause", exact: true }).waitFor();
    assert.equal(await why.count(), 0);
    await page.close();
  }
  assert.deepEqual(problems, []);
});

test("bidirectional controls in names from the server are shown escaped", async () => {
  // A message on a subject and with a header value that carry an override
  // (header names are ASCII: the gateway refuses others), leased by a
  // principal whose name carries one, terminated with a reason that does.
  const subject = "orders.\u202Etxt.exe";
  await jg.api(WORKER_KEY, "POST", "/v1/streams/ORDERS:publish", {
    subject, data: btoa("evil"), headers: { "X-Note": { values: ["v\u202Eal"] } },
  });
  await jg.api(WORKER_KEY, "POST", "/v1/streams/ORDERS:publish", { subject: "orders.new", data: btoa("kept") });
  const got = await jg.api(EVE_KEY, "POST", `${consumerPath}:fetch`, { batch: 100, expires: "2s" });
  const evil = got.messages.find((m) => m.subject === subject);
  assert.ok(evil && got.messages.length > 1, `fetched ${JSON.stringify(got.messages.map((m) => m.subject))}`);
  await jg.api(EVE_KEY, "POST", `${consumerPath}:term`, { tokens: [evil.token], reason: "bad \u202Eorder" });
  await until("the dead letter", async () => Number((await jg.api(OPERATOR_KEY, "GET", consumerPath)).deadLetters ?? 0) >= 1);

  const bidi = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
  const shown = () => page.evaluate(() => ({ title: document.title, text: document.body.textContent }));
  const page = await signedIn(OPERATOR_KEY, { width: 1280, height: 800 });
  await page.goto(`${jg.base}/console/`);
  const row = page.locator(`tr[data-consumer="${BIDI_CONSUMER}"]`);
  await row.waitFor();
  assert.equal(await row.locator("a").textContent(), "\\u202Egnillib");
  assert.equal(await row.locator("a .bidi-escape").textContent(), "\\u202E");
  assert.doesNotMatch((await shown()).text, bidi);

  await page.evaluate(() => { location.hash = "#/streams/ORDERS/consumers/billing"; });
  const lease = page.locator("#leases-body tr[data-principal]").filter({ hasText: "eve" });
  await lease.waitFor();
  assert.equal(await lease.locator("th").textContent(), "eve\\u202Eresu");
  const letter = page.locator("#dead-body tr[data-seq]").filter({ hasText: "txt.exe" });
  await letter.waitFor();
  const cells = await letter.locator("td").allTextContents();
  assert.ok(cells.includes("orders.\\u202Etxt.exe"), `subject: ${cells}`);
  const headers = await letter.locator("details pre").textContent();
  assert.match(headers, /^Jetgate-Dead-Term-Reason: bad \\u202Eorder$/m);
  assert.match(headers, /^X-Note: v\\u202Eal$/m);
  assert.ok((await letter.locator(".bidi-escape").count()) >= 4);
  assert.doesNotMatch((await shown()).text, bidi);
  await shot(page, "consumer-bidi-names-1280x800");

  await page.evaluate((c) => { location.hash = `#/streams/ORDERS/consumers/${encodeURIComponent(c)}`; }, BIDI_CONSUMER);
  await page.getByText("No dead-letter subject is configured for this consumer.").waitFor();
  assert.equal(await page.locator("#main h1").textContent(), "\\u202Egnillib of stream ORDERS");
  const { title, text } = await shown();
  assert.equal(title, "\\u202Egnillib · ORDERS — jetgate console");
  assert.doesNotMatch(text, bidi);
  await page.close();
  assert.deepEqual(problems, []);
});

test("Replay from… a sequence and a time, each confirmed with its count; who created a consumer", async () => {
  const path = "/v1/streams/REPLAY/consumers/replayed";
  const made = await jg.api(OPERATOR_KEY, "POST", "/v1/streams/REPLAY/consumers", { config: { durableName: "replayed", ackWait: "30s" } });
  assert.equal(made.config.metadata["jetgate.created_by"], "operator");
  const publish = async (...bodies) => {
    const seqs = [];
    for (const b of bodies) seqs.push(Number((await jg.api(WORKER_KEY, "POST", "/v1/streams/REPLAY:publish", { subject: "replay.x", data: btoa(b) })).seq));
    return seqs;
  };
  // Leases n messages as the worker and acks them: their bodies and delivery counts.
  const take = async (n) => {
    const got = [];
    while (got.length < n) {
      const r = await jg.api(WORKER_KEY, "POST", `${path}:fetch`, { batch: n - got.length, expires: "2s" });
      assert.ok(r.messages?.length, `fetched ${got.length} of ${n}`);
      got.push(...r.messages);
    }
    await jg.api(WORKER_KEY, "POST", `${path}:ack`, { tokens: got.map((m) => m.token) });
    return got.map((m) => [atob(m.data), Number(m.metadata.numDelivered)]);
  };
  const seqs = await publish("a", "b", "c", "d", "e");
  await take(5);

  const page = await signedIn(OPERATOR_KEY, { width: 1280, height: 800 });
  await page.goto(`${jg.base}/console/`);
  const row = page.locator('tr[data-consumer="replayed"]');
  await row.waitFor();
  assert.equal(await row.locator('[data-field="created-by"]').textContent(), "operator");
  assert.equal(await page.locator('tr[data-consumer="billing"] [data-field="created-by"]').textContent(), "—");
  await row.getByRole("link", { name: "replayed" }).click();
  await page.getByText("Created through jetgate's API by operator.").waitFor();

  // From a sequence: the count is exact (no gaps, no filter), then the answer.
  await page.locator("#replay-sequence").fill(String(seqs[2]));
  assert.equal(await page.locator("#replay-kind-sequence").isChecked(), true);
  await page.getByRole("button", { name: "Replay", exact: true }).click();
  const dialog = page.locator("dialog[open]");
  await dialog.waitFor();
  assert.match(await dialog.locator("#confirm-text").textContent(),
    new RegExp(`^replayed delivers again from stream sequence ${seqs[2]}: 3 messages \\(stream sequences ${seqs[2]} to ${seqs[4]}\\)\\. Its leases`));
  await shot(page, "consumer-replay-confirm-1280x800");
  await confirmIn(page, "Replay");
  await page.locator("#replay-result").getByText(`replayed replays from stream sequence ${seqs[2]}: 3 message(s) to deliver.`).waitFor();
  assert.equal((await jg.api(OPERATOR_KEY, "GET", path)).state.numPending, "3");
  assert.deepEqual(await take(3), [["c", 1], ["d", 1], ["e", 1]]);

  // From a time: one message before a whole second, two after it.
  await publish("f");
  const at = Math.ceil((Date.now() + 1) / 1000) * 1000;
  await until("the next second", async () => Date.now() > at + 10, 3_000);
  const [g] = await publish("g", "h");
  await take(3);
  // Not in the future: said beside the form, nothing asked. A whole minute
  // is written without its seconds, as the browser normalises the value
  // (else fill finds "…T21:04" where it put "…T21:04:00": "Malformed value").
  const local = (t) => page.evaluate((ms) => {
    const d = new Date(ms);
    const p = (n) => String(n).padStart(2, "0");
    const s = d.getSeconds() ? `:${p(d.getSeconds())}` : "";
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}${s}`;
  }, t);
  await page.locator("#replay-time").fill(await local(Date.now() + 3_600_000));
  assert.equal(await page.locator("#replay-kind-time").isChecked(), true);
  await page.getByRole("button", { name: "Replay", exact: true }).click();
  assert.match(await page.locator("#replay-error").textContent(), /must not be in the future/);
  assert.equal(await page.locator("dialog[open]").count(), 0);
  await page.locator("#replay-time").fill(await local(at));
  await page.getByRole("button", { name: "Replay", exact: true }).click();
  await dialog.waitFor();
  // The console cannot tell when each message was stored: a bound, said so.
  assert.match(await dialog.locator("#confirm-text").textContent(), /^replayed delivers again from the first message stored at or after .+: at most 8 messages\. /);
  await confirmIn(page, "Replay");
  await page.locator("#replay-result").getByText(`replayed replays from stream sequence ${g}: 2 message(s) to deliver.`).waitFor();
  assert.deepEqual(await take(2), [["g", 1], ["h", 1]]);
  await shot(page, "consumer-replay-1280x800");
  await page.close();

  // Without the seek grant: the 403 stays on the page.
  const reader = await signedIn(READER_KEY, { width: 1280, height: 800 });
  await reader.goto(`${jg.base}/console/#/streams/ORDERS/consumers/billing`);
  await reader.getByText(/^Not created through jetgate's API/).waitFor();
  await reader.locator("#replay-kind-sequence").check();
  await reader.locator("#replay-sequence").fill("1");
  await reader.getByRole("button", { name: "Replay", exact: true }).click();
  await confirmIn(reader, "Replay");
  const notice = reader.locator("#notices .notice p");
  await notice.waitFor();
  assert.match(await notice.textContent(), /^Replay of ORDERS \/ billing failed: HTTP 403 Forbidden: \S/);
  await reader.close();
  assert.deepEqual(problems, []);
});

test("a consumer's page lists the stream's consumers as it opens, not at every refresh", async () => {
  // It re-listed every consumer of the stream (their oldest messages and
  // dead letters read on the server) every 5s, to learn whether this one
  // has a dead-letter subject.
  const page = await signedIn(OPERATOR_KEY, { width: 1280, height: 800 });
  const lists = [];
  page.on("request", (r) => { if (/\/v1\/streams\/ORDERS\/consumers$/.test(new URL(r.url()).pathname)) lists.push(r.url()); });
  await page.goto(`${jg.base}/console/#/streams/ORDERS/consumers/billing`);
  await page.locator("#dead-body p.meta").waitFor();
  const opened = lists.length;
  const n = await loads(page);
  await until("two more refreshes", async () => (await loads(page)) > n + 1);
  assert.equal(lists.length, opened, `the stream listed ${lists.length - opened} more times over two refreshes`);
  await page.close();
  assert.deepEqual(problems, []);
});
