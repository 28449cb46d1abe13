// Every action is confirmed in a modal <dialog> first: focus moves into it,
// Escape cancels, and the confirm button names what it will do.
import { replace } from "./dom";

export function confirmAction(title: string, text: string, ok: string): Promise<boolean> {
  const dlg = document.getElementById("confirm") as HTMLDialogElement;
  replace(document.getElementById("confirm-title") as HTMLElement, title);
  replace(document.getElementById("confirm-text") as HTMLElement, text);
  const okButton = document.getElementById("confirm-ok") as HTMLButtonElement;
  okButton.textContent = ok;
  return new Promise((resolve) => {
    dlg.returnValue = "";
    dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
    dlg.showModal();
    okButton.focus();
  });
}
