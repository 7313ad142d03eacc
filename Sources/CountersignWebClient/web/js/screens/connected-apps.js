// Settings → Connected apps (docs/PROTOCOL.md §6.10): the applications this account allowed to sign in with
// Countersign, each with what it receives and since when, and "Disconnect": its consent is forgotten (it asks
// again next time) and every token it holds ends at once.
import { describe } from "../api.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, replace } from "../dom.js";
import { connectedApps, disconnectApp } from "../server/oidc.js";
import { SCOPE_WORDS } from "./authorize.js";

const day = (iso) => {
  const at = new Date(iso);
  return Number.isFinite(at.getTime()) ? at.toLocaleDateString([], { dateStyle: "medium" }) : "";
};

/** The section's parts; `said` is where an action's outcome is told. */
export function connectedAppsPart(said) {
  const list = el("ul", { class: "list", "aria-label": "Connected apps" });
  async function load() {
    const { apps } = await connectedApps();
    if (!apps.length) {
      return replace(list, el("li", { class: "muted" }, "No application signs in with your Countersign account."));
    }
    replace(list, ...apps.map(item));
  }
  function item(app) {
    const label = visibleText(app.name);
    const disconnect = el("button", { type: "button", class: "danger", "aria-label": `Disconnect ${label}` },
      "Disconnect");
    disconnect.addEventListener("click", async () => {
      said.alert.textContent = "";
      said.status.textContent = "";
      disconnect.disabled = true;
      try {
        await disconnectApp(app.clientId);
        said.status.textContent = `Disconnected ${label}: its access ended, and it asks again before it signs you in.`;
        await load();
      } catch (error) {
        disconnect.disabled = false;
        said.alert.textContent = describe(error);
      }
    });
    return el(
      "li",
      { "aria-label": label },
      el("strong", {}, nameElement(app.name)),
      el("div", { class: "muted" }, `Allowed ${day(app.connectedAt)}. It receives:`),
      el("ul", {}, app.scope.map((s) => el("li", {}, SCOPE_WORDS[s] ?? s))),
      el("div", { class: "actions" }, disconnect),
    );
  }
  load().catch((error) => (said.alert.textContent = describe(error)));
  return [
    el("h2", {}, "Connected apps"),
    el(
      "p",
      { class: "muted" },
      "Applications you allowed to sign you in with Countersign. Disconnecting one ends its access at once.",
    ),
    list,
  ];
}
