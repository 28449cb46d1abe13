// The jetgate operator console: a page at /console that shows what the
// gateway serves and acts on it through the REST API, with the user's own
// credential. Routes: #/ (streams and consumers), #/streams/S/consumers/C.
import "./style.css";
import { APIError, credential, setCredential } from "./api";
import { h, replace } from "./dom";
import { renderOverview } from "./overview";
import { renderConsumer } from "./consumer";
import { POLL_MS, say } from "./state";

const main = document.getElementById("main") as HTMLElement;
const crumbs = document.getElementById("crumbs") as HTMLElement;
const who = document.getElementById("who") as HTMLElement;
const statusLine = document.getElementById("status") as HTMLElement;

let timer: number | undefined;
let generation = 0;

type Page = { title: string; crumbs: [string, string][]; load: (el: HTMLElement, first: boolean) => Promise<void> };

function route(): Page {
  const m = /^#\/streams\/([^/]+)\/consumers\/([^/]+)$/.exec(location.hash);
  if (m) {
    const stream = decodeURIComponent(m[1]);
    const consumer = decodeURIComponent(m[2]);
    return {
      title: `${consumer} · ${stream}`,
      crumbs: [["Streams", "#/"], [`${stream} / ${consumer}`, location.hash]],
      load: (el, first) => renderConsumer(el, stream, consumer, first, refresh),
    };
  }
  return { title: "Streams and consumers", crumbs: [["Streams", "#/"]], load: (el, first) => renderOverview(el, first) };
}

/** Loads the current page again now (after an action). */
function refresh(): void {
  void show(false);
}

async function show(first: boolean): Promise<void> {
  const gen = ++generation;
  window.clearTimeout(timer);
  const page = route();
  document.title = `${page.title} — jetgate console`;
  replace(crumbs, ...page.crumbs.map(([label, href], i) =>
    i === page.crumbs.length - 1 ? h("span", { "aria-current": "page" }, label) : h("a", { href }, label)));
  renderWho();
  try {
    await page.load(main, first);
    if (gen !== generation) return;
    if (statusLine.className === "error") say("");
  } catch (e) {
    if (gen !== generation) return;
    if (e instanceof APIError && e.status === 401) {
      askCredential(credential() ? "That key or token was not accepted." : "");
      return;
    }
    say(e instanceof Error ? e.message : String(e), true);
  }
  if (gen === generation && !document.hidden) timer = window.setTimeout(() => void show(false), POLL_MS);
}

function renderWho(): void {
  if (!credential()) {
    replace(who);
    return;
  }
  if (who.querySelector("button")) return; // kept across polls, so a click never lands on a replaced one
  replace(who, h("button", { type: "button", class: "secondary", onclick: () => { setCredential(""); askCredential(""); } }, "Sign out"));
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
  void show(true);
  main.focus();
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) void show(false);
  else window.clearTimeout(timer);
});
void show(true);
