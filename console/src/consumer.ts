// A consumer's page: who created it, its figures, who holds its leases, its
// priority groups, push state, dead letters and configuration, and the
// actions Pause, Resume, Replay from…, Unpin and Redrive, each confirmed
// first.
import { call, why, type ConsumerSummary, type DeadLetters, type GetConsumer, type Leases } from "./api";
import { confirmAction } from "./confirm";
import { h, replace, spark } from "./dom";
import {
  configEntries, createdByText, durationMs, formatAge, formatCount, localInput, METRIC_LABELS, METRICS, type Metric, paths, pauseUntil,
  preview, principalName, redriveBody, relativeTime, sampleOf, sparkPoints,
} from "./logic";
import { replayForm } from "./replayform";
import { history, notify, say } from "./state";

type Parts = Record<"created" | "figures" | "actions" | "leases" | "groups" | "push" | "dead" | "config", HTMLElement>;

let page: { key: string; parts: Parts; shown: Map<string, string>; token: string; selected: Set<string> } | null = null;

/**
 * Renders the consumer's page into el, or throws the first failed call's
 * error (GetConsumer's before the others') and renders nothing: the caller
 * then shows why in place of the page.
 */
export async function renderConsumer(
  el: HTMLElement, stream: string, consumer: string, first: boolean, live: () => boolean, refresh: () => void,
): Promise<void> {
  const key = `${stream}/${consumer}`;
  const known = first ? undefined : deadLetterConfigured.get(key);
  const [got, held, listed] = await Promise.allSettled([
    call<GetConsumer>("GET", paths.consumer(stream, consumer)),
    call<Leases>("GET", paths.leases(stream, consumer)),
    known === undefined ? call<{ consumers?: ConsumerSummary[] }>("GET", paths.consumers(stream)) : Promise.resolve(undefined),
  ]);
  const info = settled(got);
  const leases = settled(held);
  let deadLetter = known ?? false;
  if (known === undefined && listed.status === "fulfilled") { // else asked again at the next poll
    deadLetter = (listed.value?.consumers ?? []).some((c) => c.name === consumer && c.deadLetterConfigured === true);
    deadLetterConfigured.set(key, deadLetter);
  }
  if (!live()) return;
  const now = Date.now();
  history.add(key, sampleOf(now, { ...info.state, oldestUnackedAge: info.oldestUnackedAge }));
  if (first || page?.key !== key || !el.contains(page.parts.figures)) {
    page = { key, parts: skeleton(el, consumer, stream), shown: new Map(), token: "", selected: new Set() };
    renderActions(page.parts.actions, stream, consumer, refresh);
  }
  const p = page;
  replace(p.parts.figures, ...figures(info, key, now));
  patch("created", JSON.stringify(info.config?.metadata ?? {}), () => replace(p.parts.created, createdByText(info.config?.metadata)));
  patch("state", JSON.stringify(info.state?.paused) + JSON.stringify(info.state?.pauseRemaining ? "p" : ""), () =>
    renderPaused(p.parts.actions, info));
  patch("leases", JSON.stringify(leases), () => replace(p.parts.leases, ...leaseTable(leases, now)));
  patch("groups", JSON.stringify(info.state?.priorityGroups ?? []), () => replace(p.parts.groups, ...groupTable(info, stream, consumer, refresh)));
  patch("push", JSON.stringify(info.push ?? null), () => replace(p.parts.push, ...pushState(info)));
  patch("config", JSON.stringify(info.config ?? {}), () => replace(p.parts.config, configList(info)));
  // Dead letters are asked for only where there can be some: asking of a
  // consumer without a dead-letter subject is a failed call (400).
  await patch("dead", JSON.stringify([deadLetter, info.deadLetters ?? "0"]), () => deadLetter
    ? loadDeadLetters(stream, consumer, info, refresh)
    : replace(p.parts.dead, h("p", {}, "No dead-letter subject is configured for this consumer.")));
}

// Whether each consumer has a dead-letter subject: GetConsumer does not say,
// the stream's listing does, which reads every consumer of the stream. So
// it is asked as a consumer's page opens, not at every poll.
const deadLetterConfigured = new Map<string, boolean>();

function settled<T>(r: PromiseSettledResult<T>): T {
  if (r.status === "rejected") throw r.reason;
  return r.value;
}

/** Re-renders a part only when what it shows changed, so that focus and input survive the polling. */
function patch(part: string, json: string, render: () => void | Promise<void>): void | Promise<void> {
  if (page && page.shown.get(part) !== json) {
    page.shown.set(part, json);
    return render();
  }
}

function section(id: string, title: string, ...rest: HTMLElement[]): [HTMLElement, HTMLElement] {
  const body = h("div", { id: `${id}-body` });
  return [h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...rest, body), body];
}

function skeleton(el: HTMLElement, consumer: string, stream: string): Parts {
  const created = h("p", { id: "created-by", class: "meta" });
  const figures = h("div", { class: "figures" });
  const [actionsCard, actions] = section("actions", "Actions");
  const [leasesCard, leases] = section("leases", "Leases by principal");
  const [groupsCard, groups] = section("groups", "Priority groups");
  const [pushCard, push] = section("push", "Push");
  const [deadCard, dead] = section("dead", "Dead letters");
  const [configCard, config] = section("config", "Configuration");
  replace(el,
    h("h1", {}, consumer, h("span", { class: "sub" }, ` of stream ${stream}`)),
    created, figures, actionsCard, leasesCard, deadCard, groupsCard, pushCard, configCard);
  return { created, figures, actions, leases, groups, push, dead, config };
}

function figures(info: GetConsumer, key: string, now: number): HTMLElement[] {
  const st = info.state ?? {};
  const values: Record<Metric, string> = {
    pending: formatCount(st.numPending), ackPending: formatCount(st.numAckPending),
    redelivered: formatCount(st.numRedelivered), waiting: formatCount(st.numWaiting),
    oldestMs: formatAge(durationMs(info.oldestUnackedAge)),
  };
  const samples = history.get(key);
  return METRICS.map((m) => h("div", { class: "figure", "data-metric": m },
    h("div", { class: "label" }, METRIC_LABELS[m]),
    h("div", { class: "value" }, values[m]),
    spark(sparkPoints(samples, m, now, history.windowMs, 160, 32), `${METRIC_LABELS[m]} over the last minutes`, 160, 32)));
}

/** Confirms and runs an action; its error stays on the page until dismissed (notify), whatever reloads. */
async function act(what: string, title: string, text: string, ok: string, run: () => Promise<string>, refresh: () => void): Promise<void> {
  if (!(await confirmAction(title, text, ok))) return;
  try {
    say(await run());
  } catch (e) {
    say("");
    notify(`${what} failed: ${why(e)}`);
  }
  if (page) page.shown.clear();
  refresh();
}

function renderActions(el: HTMLElement, stream: string, consumer: string, refresh: () => void): void {
  const name = `${stream} / ${consumer}`;
  const until = h("input", { id: "pause-until", type: "datetime-local", value: localInput(new Date(Date.now() + 3600_000)) });
  const invalid = h("p", { id: "pause-until-error", class: "error", role: "alert" });
  const valid = () => {
    replace(invalid);
    until.removeAttribute("aria-invalid");
    until.removeAttribute("aria-describedby");
  };
  until.addEventListener("input", valid);
  const pause = h("button", { type: "button", onclick: () => {
    const at = pauseUntil(until.value, new Date());
    if (at instanceof Error) {
      replace(invalid, at.message);
      until.setAttribute("aria-invalid", "true");
      until.setAttribute("aria-describedby", invalid.id);
      until.focus();
      return;
    }
    valid();
    void act(`Pause of ${name}`, "Pause the consumer?", `${consumer} delivers nothing to anyone (jetgate's callers and others) until ${new Date(at).toLocaleString()}.`, "Pause",
      async () => {
        await call("POST", paths.action(stream, consumer, "pause"), { pauseUntil: at });
        return `${consumer} paused until ${new Date(at).toLocaleString()}.`;
      }, refresh);
  } }, "Pause");
  const resume = h("button", { type: "button", onclick: () => void act(`Resume of ${name}`, "Resume the consumer?", `${consumer} delivers again at once.`, "Resume",
    async () => {
      await call("POST", paths.action(stream, consumer, "resume"), {});
      return `${consumer} resumed.`;
    }, refresh) }, "Resume");
  replace(el,
    h("p", { id: "paused-state", class: "state" }),
    h("div", { class: "row" },
      h("label", { for: "pause-until" }, "Pause until"), until, pause, resume),
    invalid,
    replayForm(stream, consumer, (what, title, text, ok, run) => act(what, title, text, ok, run, refresh)));
}

function renderPaused(el: HTMLElement, info: GetConsumer): void {
  const p = el.querySelector("#paused-state");
  if (!p) return;
  const st = info.state ?? {};
  p.textContent = st.paused ? `Paused: delivers again in ${formatAge(durationMs(st.pauseRemaining))}.` : "Running: not paused.";
  p.className = st.paused ? "state warn" : "state";
}

function leaseTable(l: Leases, now: number): HTMLElement[] {
  const holders = l.holders ?? [];
  const parts: (HTMLElement | null)[] = [
    holders.length === 0
      ? h("p", {}, "No live leases.")
      : h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Principal"), h("th", { scope: "col", class: "num" }, "Leases"),
          h("th", { scope: "col", class: "num" }, "Oldest"), h("th", { scope: "col" }, "Latest deadline"),
          h("th", { scope: "col", class: "num" }, "Kept alive"), h("th", { scope: "col" }, "Replicas"))),
        h("tbody", {}, ...holders.map((x) => h("tr", { "data-principal": x.principal ?? "" },
          h("th", { scope: "row" }, principalName(x.principal)),
          h("td", { class: "num" }, formatCount(x.leases)),
          h("td", { class: "num" }, formatAge(durationMs(x.oldestAge))),
          h("td", { "data-field": "latest-deadline" }, ...deadline(x.latestDeadline, now)),
          h("td", { class: "num", "data-field": "kept" }, formatCount(x.kept)),
          h("td", { class: "mono" }, (x.replicas ?? []).map(short).join(", "))))))),
    holders.length === 0
      ? null
      : h("p", { class: "meta" }, "Kept alive: leases extended by a duration, which the replica that handed them out renews until the deadline asked for."),
    h("p", { class: "meta" }, `Counted on ${(l.replicas ?? []).length} replica(s): ${(l.replicas ?? []).map(short).join(", ")}.`),
    (l.missingReplicas ?? []).length > 0
      ? h("p", { class: "error", role: "alert" }, `Not counted: replica(s) ${(l.missingReplicas ?? []).map(short).join(", ")} did not answer in time.`)
      : null,
  ];
  return parts.filter((x): x is HTMLElement => x !== null);
}

/** A deadline as a local time and as how far off it is ("in 9m 58s"). */
function deadline(at: string | undefined, now: number): (HTMLElement | string)[] {
  const rel = relativeTime(at, now);
  if (!at || !rel) return ["—"];
  return [h("time", { datetime: at }, new Date(at).toLocaleString()), h("span", { class: "meta when" }, rel)];
}

function short(id: string): string {
  return id.length > 12 ? id.slice(0, 12) : id;
}

function groupTable(info: GetConsumer, stream: string, consumer: string, refresh: () => void): HTMLElement[] {
  const groups = info.state?.priorityGroups ?? [];
  if (groups.length === 0) return [h("p", {}, "No priority groups.")];
  return [h("table", {},
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Group"), h("th", { scope: "col" }, "Pinned"), h("th", { scope: "col" }, ""))),
    h("tbody", {}, ...groups.map((g) => h("tr", {},
      h("th", { scope: "row", id: `group-${g.group}` }, g.group),
      h("td", {}, g.pinned ? `yes, since ${new Date(g.pinnedSince ?? "").toLocaleString()}` : "no"),
      h("td", {}, h("button", { type: "button", "aria-describedby": `group-${g.group}`, disabled: !g.pinned,
        onclick: () => void act(`Unpin of group ${g.group} of ${stream} / ${consumer}`, "Unpin the group?", `The pinned client of group ${g.group} loses its pin; the next pull of the group is pinned in its place.`, "Unpin",
          async () => {
            await call("POST", paths.action(stream, consumer, "unpin"), { group: g.group });
            return `Group ${g.group} unpinned.`;
          }, refresh) }, "Unpin"))))))];
}

function pushState(info: GetConsumer): HTMLElement[] {
  const p = info.push;
  if (!p) return [h("p", {}, "Not pushed: callers fetch or consume its messages.")];
  return [h("dl", {},
    h("dt", {}, "Endpoint"), h("dd", { class: "mono" }, p.url ?? ""),
    h("dt", {}, "Endpoint up"), h("dd", {}, p.endpointUp ? "yes" : "no: holding back, one request at a time"),
    h("dt", {}, "In flight"), h("dd", {}, String(p.inFlight ?? 0)),
    h("dt", {}, "Last error"), h("dd", {}, p.lastError ? `${p.lastError} (${new Date(p.lastErrorTime ?? "").toLocaleString()})` : "none"))];
}

function configList(info: GetConsumer): HTMLElement {
  const dl = h("dl", { class: "config" });
  for (const [k, v] of configEntries(info.config ?? {})) dl.append(h("dt", {}, k), h("dd", { class: "mono" }, v));
  return dl;
}

async function loadDeadLetters(stream: string, consumer: string, info: GetConsumer, refresh: () => void): Promise<void> {
  const p = page;
  if (!p) return;
  const el = p.parts.dead;
  let res: DeadLetters;
  try {
    res = await call<DeadLetters>("GET", paths.deadLetters(stream, consumer, p.token));
  } catch (e) {
    replace(el, (e as Error).message.includes("NO_DEAD_LETTER")
      ? h("p", {}, "No dead-letter subject is configured for this consumer.")
      : h("p", { class: "error" }, `Could not list the dead letters: ${why(e)}`));
    return;
  }
  const letters = res.deadLetters ?? [];
  const redrive = h("button", { type: "button", onclick: () => {
    const seqs = [...p.selected];
    const all = seqs.length === 0;
    void act(`Redrive of ${stream} / ${consumer}`, all ? "Redrive every dead letter?" : `Redrive ${seqs.length} dead letter(s)?`,
      `${all ? `All ${formatCount(info.deadLetters)} dead letters` : `Dead letters ${seqs.join(", ")}`} go back to their original subjects and leave the dead-letter stream.`, "Redrive",
      async () => {
        const r = await call<{ redriven?: string; failures?: { seq: string; message?: string }[] }>("POST", paths.action(stream, consumer, "redrive"), redriveBody(stream, consumer, seqs));
        p.selected.clear();
        p.token = "";
        const fails = r.failures ?? [];
        if (fails.length) notify(`Redrive of ${stream} / ${consumer}: not redriven: ${fails.map((f) => `${f.seq} (${f.message})`).join("; ")}.`);
        return `${formatCount(r.redriven)} redriven.`;
      }, refresh);
  } }, "Redrive");
  const selectedNote = h("span", { class: "meta", id: "redrive-what" }, p.selected.size ? `${p.selected.size} selected` : "none selected: all of them");
  const rows = letters.map((d) => {
    const box = h("input", { type: "checkbox", id: `dl-${d.seq}`, checked: p.selected.has(d.seq), "aria-label": `Select dead letter ${d.seq}` });
    box.addEventListener("change", () => {
      if (box.checked) p.selected.add(d.seq);
      else p.selected.delete(d.seq);
      selectedNote.textContent = p.selected.size ? `${p.selected.size} selected` : "none selected: all of them";
    });
    const pv = preview(d.dataPreview, Number(d.dataSize ?? 0));
    const headers = Object.entries(d.headers ?? {}).map(([k, v]) => `${k}: ${(v.values ?? []).join(", ")}`).join("\n");
    return h("tr", { "data-seq": d.seq },
      h("td", {}, box),
      h("td", { class: "num" }, d.seq),
      h("td", {}, d.time ? new Date(d.time).toLocaleString() : ""),
      h("td", {}, d.reason ?? ""),
      h("td", { class: "mono" }, d.subject ?? ""),
      h("td", { class: "num" }, d.deliveries ?? ""),
      h("td", {}, h("pre", { class: pv.binary ? "preview binary" : "preview" }, pv.text),
        h("details", {}, h("summary", {}, "Headers"), h("pre", { class: "preview" }, headers))));
  });
  replace(el,
    h("p", { class: "meta" }, `${formatCount(res.total)} waiting.`),
    letters.length === 0 ? h("p", {}, "No dead letters.") : h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Select")),
        h("th", { scope: "col", class: "num" }, "Seq"), h("th", { scope: "col" }, "Stored"), h("th", { scope: "col" }, "Reason"),
        h("th", { scope: "col" }, "Subject"), h("th", { scope: "col", class: "num" }, "Deliveries"), h("th", { scope: "col" }, "Data"))),
      h("tbody", {}, ...rows))),
    h("div", { class: "row" },
      letters.length ? redrive : null, letters.length ? selectedNote : null,
      p.token ? h("button", { type: "button", class: "secondary", onclick: () => { p.token = ""; void loadDeadLetters(stream, consumer, info, refresh); } }, "First page") : null,
      res.nextPageToken ? h("button", { type: "button", class: "secondary", onclick: () => { p.token = res.nextPageToken ?? ""; void loadDeadLetters(stream, consumer, info, refresh); } }, "Next page") : null));
}
