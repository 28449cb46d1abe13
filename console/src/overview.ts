// The first page: every stream the gateway serves, and each of its
// consumers with its backlog and a sparkline of each figure.
import { call, type ConsumerSummary, type StreamSummary } from "./api";
import { h, replace, spark } from "./dom";
import { durationMs, formatAge, formatCount, METRIC_LABELS, METRICS, type Metric, paths, sampleOf, sparkPoints } from "./logic";
import { history } from "./state";

export async function renderOverview(el: HTMLElement, live: () => boolean): Promise<void> {
  const { streams = [] } = await call<{ streams?: StreamSummary[] }>("GET", paths.streams());
  const lists = await Promise.all(streams.map((s) => call<{ consumers?: ConsumerSummary[] }>("GET", paths.consumers(s.name))));
  if (!live()) return;
  const now = Date.now();
  const sections = streams.map((s, i) => {
    const consumers = lists[i].consumers ?? [];
    for (const c of consumers) history.add(`${s.name}/${c.name}`, sampleOf(now, c));
    return streamSection(s, consumers, now);
  });
  replace(el,
    h("h1", {}, "Streams and consumers"),
    h("p", { class: "hint" }, `Figures as the NATS server reports them, asked every 5 s while this page is shown; each line shows the last ${history.windowMs / 60000} minutes this page has seen.`),
    streams.length === 0 ? h("p", {}, "This gateway serves no consumer you may read.") : null,
    ...sections,
  );
}

function streamSection(s: StreamSummary, consumers: ConsumerSummary[], now: number): HTMLElement {
  const id = `stream-${s.name}`;
  return h("section", { class: "card", "aria-labelledby": id },
    h("h2", { id }, s.name),
    h("p", { class: "meta" },
      `${formatCount(s.messages)} messages · ${formatCount(s.bytes)} bytes · sequences ${s.firstSeq ?? 0}–${s.lastSeq ?? 0} · subjects ${(s.subjects ?? []).join(", ")}`),
    h("div", { class: "scroll" },
      h("table", {},
        h("caption", { class: "visually-hidden" }, `Consumers of ${s.name}`),
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Consumer"),
          ...METRICS.map((m) => h("th", { scope: "col", class: "num" }, METRIC_LABELS[m])),
          h("th", { scope: "col", class: "num" }, "Dead letters"),
          h("th", { scope: "col" }, "State"),
          h("th", { scope: "col" }, "Created by"))),
        h("tbody", {}, ...consumers.map((c) => consumerRow(s.name, c, now))))));
}

function consumerRow(stream: string, c: ConsumerSummary, now: number): HTMLElement {
  const samples = history.get(`${stream}/${c.name}`);
  const value = (m: Metric): string => {
    switch (m) {
      case "pending": return formatCount(c.numPending);
      case "ackPending": return formatCount(c.numAckPending);
      case "redelivered": return formatCount(c.numRedelivered);
      case "waiting": return formatCount(c.numWaiting);
      case "oldestMs": return formatAge(durationMs(c.oldestUnackedAge));
    }
  };
  const state = [c.paused ? "paused" : "running", c.pushed ? "pushed" : ""].filter(Boolean).join(", ");
  return h("tr", { "data-consumer": c.name },
    h("th", { scope: "row" }, h("a", { href: `#/streams/${encodeURIComponent(stream)}/consumers/${encodeURIComponent(c.name)}` }, c.name)),
    ...METRICS.map((m) => h("td", { class: "num", "data-metric": m },
      h("span", { class: "value" }, value(m)),
      spark(sparkPoints(samples, m, now, history.windowMs, 80, 20), `${METRIC_LABELS[m]} over the last minutes`, 80, 20))),
    h("td", { class: "num" }, c.deadLetterConfigured ? formatCount(c.deadLetters) : "—"),
    h("td", {}, h("span", { class: c.paused ? "badge warn" : "badge" }, state)),
    // Empty for a consumer not created through the API (the file's, or another client's).
    h("td", { "data-field": "created-by" }, c.createdBy ? c.createdBy : "—"));
}
