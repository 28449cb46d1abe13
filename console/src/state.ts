// What the pages share: the history behind the sparklines (kept in the
// page from its own polling, never asked of the server), the status line,
// and the errors of actions, which stay until the user dismisses them.
import { h, replace } from "./dom";
import { History } from "./logic";

export const history = new History();

/** How often a page asks the API again while it is shown. */
export const POLL_MS = 5000;

/** Says something to the user (and to screen readers). */
export function say(text: string, isError = false): void {
  const el = document.getElementById("status") as HTMLElement;
  replace(el, text);
  el.className = isError ? "error" : "";
}

/**
 * Shows an action's error until the user dismisses it: no reload, poll or
 * page change takes it away, so that it is read before it goes.
 */
export function notify(text: string): void {
  const box = document.getElementById("notices") as HTMLElement;
  const note: HTMLElement = h("div", { class: "notice", role: "alert" },
    h("p", {}, text),
    h("button", { type: "button", class: "secondary", "aria-label": "Dismiss this error", onclick: () => {
      const next = note.nextElementSibling ?? note.previousElementSibling;
      note.remove();
      ((next?.querySelector("button") as HTMLElement | null) ?? (document.getElementById("main") as HTMLElement)).focus();
    } }, "Dismiss"));
  box.append(note);
}

/** Takes every action's error away (a new user signs in). */
export function clearNotices(): void {
  replace(document.getElementById("notices") as HTMLElement);
}
