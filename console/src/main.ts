// The jetgate operator console: a page at /console that shows what the
// gateway serves and acts on it through the REST API, with the user's own
// credential. Routes: #/ (streams and consumers), #/streams/S/consumers/C.
import "./style.css";
import { APIError, credential, setCredential } from "./api";
import { h, replace } from "./dom";
import { renderOverview } from "./overview";
import { renderConsumer } from "./consumer";
import { escapeBidi, failureText } from "./logic";
import { POLL_MS, clearNotices, say } from "./state";

const main = document.getElementById("main") as HTMLElement;
const crumbs = document.getElementById("crumbs") as HTMLElement;
const who = document.getElementById("who") as HTMLElement;
const statusLine = document.getElementById("status") as HTMLElement;

let timer: number | undefined;
let generation = 0;
let loads = 0; // pages shown whole; main's data-loads, so a test can wait for the next refresh

/** A page: load renders it into el, and renders nothing once live() is false (the user went on). */
type Page = {
  title: string; crumbs: [string, string][];
  load: (el: HTMLElement, first: boolean, live: () => boolean) => Promise<void>;
};

function route(): Page {
  const m = /^#\/streams\/([^/]+)\/consumers\/([^/]+)$/.exec(location.hash);
  if (m) {
    const stream = decodeURIComponent(m[1]);
    const consumer = decodeURIComponent(m[2]);
    return {
      title: `${consumer} · ${stream}`,
      crumbs: [["Streams", "#/"], [`${stream} / ${consumer}`, location.hash]],
      load: (el, first, live) => renderConsumer(el, stream, consumer, first, live, refresh),
    };
  }
  return { title: "Streams and consumers", crumbs: [["Streams", "#/"]], load: (el, _first, live) => renderOverview(el, live) };
}

/** Loads the current page again now (after an action). */
function refresh(): void {
  void show(false);
}

async function show(first: boolean): Promise<void> {
  const gen = ++generation;
  window.clearTimeout(timer);
  const page = route();
  document.title = escapeBidi(`${page.title} — jetgate console`);
  replace(crumbs, ...page.crumbs.map(([label, href], i) =>
    i === page.crumbs.length - 1 ? h("span", { "aria-current": "page" }, label) : h("a", { href }, label)));
  renderWho();
  // A page shown anew starts empty: until its answers come, nothing of the
  // page before (another consumer's buttons) stays under the new title.
  if (first) replace(main, h("p", {}, "Loading…"));
  try {
    await page.load(main, first, () => gen === generation);
    if (gen !== generation) return;
    if (statusLine.className === "error") say("");
    main.dataset.loads = String(++loads);
  } catch (e) {
    if (gen !== generation) return;
    if (e instanceof APIError && e.status === 401) {
      askCredential(credential() ? "That key or token was not accepted." : "");
      return;
    }
    failed(page, e);
  }
  if (gen === generation && !document.hidden) timer = window.setTimeout(() => void show(false), POLL_MS);
}

/**
 * A page whose load failed shows why, and nothing else: no figures or
 * buttons of what was shown before (another consumer's, or this one's
 * before the gateway stopped answering) stay under its title.
 */
function failed(page: Page, e: unknown): void {
  const why = e instanceof APIError ? failureText(e.status, e.message) : e instanceof Error ? e.message : String(e);
  replace(main,
    h("h1", {}, page.title),
    h("p", { id: "load-error", class: "error", role: "alert" }, `Could not load this page: ${why}`),
    h("p", { class: "meta" }, `The console asks again every ${POLL_MS / 1000} s.`));
}

function renderWho(): void {
  if (!credential()) {
    replace(who);
    return;
  }
  if (who.querySelector("button")) return; // kept across polls, so a click never lands on a replaced one
  replace(who, h("button", { type: "button", class: "secondary", onclick: () => { setCredential(""); clearNotices(); askCredential(""); } }, "Sign out"));
}

/** The form that asks for an API key or token when the gateway wants one. */
function askCredential(problem: string): void {
  window.clearTimeout(timer);
  generation++;
  renderWho();
  const input = h("input", { id: "credential", type: "password", autocomplete: "off", required: true, spellcheck: "false" });
  const form = h("form", { class: "card login" },
    h("h1", {}, "Sign in"),
    h("p", {}, "This gateway asks who you are. Give an API key or a bearer token (JWT); the console sends it with each API call and keeps it in this tab only."),
    problem && h("p", { class: "error", role: "alert" }, problem),
    h("label", { for: "credential" }, "API key or token"),
    input,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in")),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    setCredential(input.value.trim());
    void show(true);
  });
  replace(main, form);
  input.focus();
}

window.addEventListener("hashchange", () => {
  say(""); // what was said of the page left
  void show(true);
  main.focus();
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) void show(false);
  else window.clearTimeout(timer);
});
void show(true);
