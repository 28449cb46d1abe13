// What the pages share: the history behind the sparklines (kept in the
// page from its own polling, never asked of the server) and the status line.
import { History } from "./logic";

export const history = new History();

/** How often a page asks the API again while it is shown. */
export const POLL_MS = 5000;

/** Says something to the user (and to screen readers). */
export function say(text: string, isError = false): void {
  const el = document.getElementById("status") as HTMLElement;
  el.textContent = text;
  el.className = isError ? "error" : "";
}
