// The paired authenticator as an approver of new devices (PROTOCOL §1.2), in Settings, Devices: beside an
// authenticator this browser may endorse, "Let it approve new devices" opens "Is this your authenticator?" with
// its name, fingerprint and code (computed here from the keys the server lists); "Yes, let it approve" signs the
// endorsement with this browser's device key, the key gate unlocked first when it must be. An endorsed one says
// so and by which device.
import { nameElement, visibleText } from "../display-name.js";
import { el, replace } from "../dom.js";
import { endorse } from "../linking.js";
import { unlockedRecord } from "./gate.js";

/**
 * What Settings shows under authenticator `d` (of `devices`, GET /v1/devices): its endorsement, or, when it is
 * one of `waiting` (awaitingEndorsement's), the button and its question. `guarded(action, words)` runs the
 * endorsement and says how it went; `done()` reloads the list.
 */
export function approverControls(d, devices, waiting, { guarded, done }) {
  if (d.endorsement) {
    const by = devices.find((x) => x.id === d.endorsement.deviceId)?.name ?? String(d.endorsement.deviceId);
    return el("div", { class: "muted" }, "Approves your new devices (allowed by “", nameElement(by), "”)");
  }
  const w = waiting.find((x) => x.device.id === d.id);
  if (!w) return null;
  const label = visibleText(d.name);
  const slot = el("div");
  const open = el(
    "button",
    { type: "button", "aria-label": `Let ${label} approve new devices`, "aria-expanded": "false" },
    "Let it approve new devices",
  );
  open.addEventListener("click", () => {
    const yes = el("button", { type: "button", class: "primary" }, "Yes, let it approve");
    const cancel = el("button", { type: "button" }, "Cancel");
    const close = () => {
      slot.replaceChildren();
      open.setAttribute("aria-expanded", "false");
      open.focus();
    };
    cancel.addEventListener("click", close);
    yes.addEventListener("click", () =>
      guarded(async () => {
        const record = await unlockedRecord(slot, "Unlock to let your authenticator approve new devices.");
        await endorse(record, w);
        await done();
      }, `“${label}” may now approve your new devices. People who pinned this browser follow what it approves.`),
    );
    const groups = w.code.split(" ");
    replace(
      slot,
      el(
        "section",
        { class: "notice", "aria-label": "Is this your authenticator?" },
        el("h3", {}, "Is this your authenticator?"),
        el("div", {}, "Fingerprint ", el("span", { class: "mono" }, w.fingerprint)),
        el("div", {}, "Code"),
        el(
          "p",
          { class: "link-code mono", "data-testid": "approver-code" },
          el("span", {}, groups.slice(0, 3).join(" ")),
          " ",
          el("span", {}, groups.slice(3).join(" ")),
        ),
        el(
          "p",
          { class: "muted" },
          "Say yes only if the authenticator shows this same code (“countersign authenticator status” on it). " +
            "It can then approve devices you add later, as this browser can.",
        ),
        el("div", { class: "actions" }, yes, cancel),
      ),
    );
    open.setAttribute("aria-expanded", "true");
    yes.focus();
  });
  return el("div", {}, el("div", { class: "actions" }, open), slot);
}
