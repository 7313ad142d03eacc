// Actions the server guards with a recent sign-in (401 reauthentication-required): the password is asked
// for in place, the session re-authenticated (POST /v1/sessions/current/reauth), and the action retried.
import { ApiError, call, describe } from "./api.js";
import { el, field } from "./dom.js";
import { session } from "./session.js";

/**
 * Runs `action`; when the server wants a recent sign-in, shows a password form in `slot` and runs the
 * action again once the password was accepted. `report` shows errors.
 */
export async function withReauth(slot, action, report) {
  try {
    return await action();
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "reauthentication-required")) throw error;
  }
  return new Promise((resolve, reject) => {
    const password = field("Password", { type: "password", autocomplete: "current-password" });
    const form = el(
      "form",
      { class: "confirm" },
      el("p", {}, "Enter your password to confirm."),
      password.row,
      el("button", { type: "submit", class: "primary" }, "Confirm"),
      el("button", { type: "button", on: { click: () => (form.remove(), reject(new Error("Not confirmed."))) } }, "Cancel"),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        const { status } = await call("POST", "/v1/sessions/current/reauth", { token: session.token, json: { password: password.input.value } });
        if (status === 202) {
          report("This account has a second factor: confirm from the command line or sign in again.");
          return;
        }
        session.authenticated();
        form.remove();
        resolve(await action());
      } catch (error) {
        password.input.value = "";
        report(describe(error));
      }
    });
    slot.replaceChildren(form);
    password.input.focus();
  });
}
