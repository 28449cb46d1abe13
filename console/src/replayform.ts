// The "Replay from…" form of a consumer's page: a time or a stream
// sequence; a confirmation that says how many messages come again
// (replay.ts counts them from the stream's and the consumer's state, asked
// anew when the button is pressed); then a Seek, whose answer stays under
// the form.
import { call, why, type GetConsumer, type StreamSummary } from "./api";
import { h, replace } from "./dom";
import { formatCount, localInput, paths } from "./logic";
import { countFromSequence, countFromTime, replayFacts, replayTarget, replayText, type ReplayTarget } from "./replay";

/** Confirms and runs an action (consumer.ts's act): run's sentence is said; its error is kept on the page. */
export type Act = (what: string, title: string, text: string, ok: string, run: () => Promise<string>) => Promise<void>;

type SeekAnswer = { resetSequence?: string; state?: { numPending?: string } };

export function replayForm(stream: string, consumer: string, act: Act): HTMLElement {
  const byTime = h("input", { type: "radio", name: "replay-kind", id: "replay-kind-time", value: "time", checked: true });
  const bySeq = h("input", { type: "radio", name: "replay-kind", id: "replay-kind-sequence", value: "sequence" });
  const time = h("input", {
    id: "replay-time", type: "datetime-local", step: "1", "aria-label": "Replay from this time",
    value: localInput(new Date(Date.now() - 3600_000)),
  });
  const seq = h("input", { id: "replay-sequence", type: "number", min: "1", step: "1", inputmode: "numeric", "aria-label": "Replay from this stream sequence" });
  const invalid = h("p", { id: "replay-error", class: "error", role: "alert" });
  const result = h("p", { id: "replay-result", class: "meta" });
  const valid = () => {
    replace(invalid);
    for (const i of [time, seq]) {
      i.removeAttribute("aria-invalid");
      i.removeAttribute("aria-describedby");
    }
  };
  time.addEventListener("input", () => { byTime.checked = true; valid(); });
  seq.addEventListener("input", () => { bySeq.checked = true; valid(); });
  for (const r of [byTime, bySeq]) r.addEventListener("change", valid);

  const button = h("button", { type: "button", id: "replay", onclick: async () => {
    const input = bySeq.checked ? seq : time;
    const target = replayTarget(bySeq.checked ? "sequence" : "time", time.value, seq.value, new Date());
    if (target instanceof Error) {
      replace(invalid, target.message);
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", invalid.id);
      input.focus();
      return;
    }
    valid();
    button.disabled = true; // while the count is asked for
    let counted: string;
    try {
      counted = await count(stream, consumer, target);
    } catch (e) {
      counted = `the console could not count them (${why(e)})`;
    } finally {
      button.disabled = false;
    }
    const from = "sequence" in target
      ? `stream sequence ${target.sequence}`
      : `the first message stored at or after ${new Date(target.time).toLocaleString()}`;
    await act(`Replay of ${stream} / ${consumer}`, `Replay ${consumer}?`,
      `${consumer} delivers again from ${from}: ${counted}. Its leases held now are void (their holders' settles are refused, and those messages come again too), for every client of the consumer, jetgate's callers and others.`,
      "Replay", async () => {
        const r = await call<SeekAnswer>("POST", paths.action(stream, consumer, "seek"), target);
        const said = `${consumer} replays from stream sequence ${r.resetSequence ?? "?"}: ${formatCount(r.state?.numPending)} message(s) to deliver.`;
        replace(result, said);
        return said;
      });
  } }, "Replay");

  return h("fieldset", { class: "replay", "aria-describedby": "replay-hint" },
    h("legend", {}, "Replay from…"),
    h("p", { id: "replay-hint", class: "meta" }, "Delivers the consumer's messages again from a time or a stream sequence on (a Seek)."),
    h("div", { class: "row" }, byTime, h("label", { for: "replay-kind-time" }, "Time"), time),
    h("div", { class: "row" }, bySeq, h("label", { for: "replay-kind-sequence" }, "Sequence"), seq),
    h("div", { class: "row" }, button),
    invalid, result);
}

/** How many messages the replay delivers, as the confirmation says it (replay.ts), from answers asked now. */
async function count(stream: string, consumer: string, target: ReplayTarget): Promise<string> {
  const [listed, info] = await Promise.all([
    call<{ streams?: StreamSummary[] }>("GET", paths.streams()),
    call<GetConsumer>("GET", paths.consumer(stream, consumer)),
  ]);
  const s = (listed.streams ?? []).find((x) => x.name === stream);
  if (!s) throw new Error(`stream ${stream} is not listed`);
  const now = Date.now();
  const facts = replayFacts(s, info, now);
  return "sequence" in target
    ? replayText(countFromSequence(Number(target.sequence), facts), facts, true)
    : replayText(countFromTime(Date.parse(target.time), facts, now), facts, false);
}
