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
    return el("div", { class: "muted" }, "Also approves your new devices (allowed by “", nameElement(by), "”)");
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
  const close = () => {
    slot.replaceChildren();
    open.setAttribute("aria-expanded", "false");
    open.focus();
  };
  open.addEventListener("click", () => {
    if (open.getAttribute("aria-expanded") === "true") return close();
    const yes = el("button", { type: "button", class: "primary" }, "Yes, let it approve");
    const cancel = el("button", { type: "button" }, "Cancel");
    cancel.addEventListener("click", close);
    yes.addEventListener("click", () =>
      guarded(async () => {
        const record = await unlockedRecord(slot, "Unlock to let your authenticator approve new devices.");
        await endorse(record, w);
        await done();
      }, `“${label}” may now approve your new devices. Your contacts accept the devices it approves without a ` +
        "warning, as they do for this browser's."),
    );
    const groups = w.code.split(" ");
    // Focus goes to the question, not to "Yes": the code is read before anything is approved.
    const heading = el("h3", { tabindex: "-1" }, "Is this your authenticator?");
    const codeLabel = el("div", { id: `approver-code-${d.id}` }, "Authenticator code");
    const panel = el(
      "section",
      { class: "notice", "aria-label": "Is this your authenticator?" },
      heading,
      el("div", {}, "Fingerprint ", el("span", { class: "mono" }, w.fingerprint)),
      codeLabel,
      el(
        "p",
        { class: "link-code mono", "data-testid": "approver-code", "aria-labelledby": codeLabel.id },
        el("span", {}, groups.slice(0, 3).join(" ")),
        " ",
        el("span", {}, groups.slice(3).join(" ")),
      ),
      el(
        "p",
        { class: "muted" },
        `Say yes only if ${label} shows this same code in its status (command line: “countersign ` +
          "authenticator status”). It can then approve devices you add later, as this browser can.",
      ),
      el("div", { class: "actions" }, yes, cancel),
    );
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") close();
    });
    replace(slot, panel);
    open.setAttribute("aria-expanded", "true");
    heading.focus();
  });
  return el(
    "div",
    {},
    el(
      "p",
      { class: "muted" },
      `${label} can also approve the new devices you sign in to, when this browser is not at hand.`,
    ),
    el("div", { class: "actions" }, open),
    slot,
  );
}
