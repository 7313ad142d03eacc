// Signing out of another application that signed in with Countersign (RP-initiated logout, docs/PROTOCOL.md
// §6.9): the page at /oauth2/logout passes the request it was opened with to the server, asks the person
// whether to sign out of Countersign in this browser too, and goes back to the application's registered
// post-logout address (or says where things stand when it gave none). A request the server refuses is shown
// here and sends the browser nowhere.
import { describe } from "../api.js";
import { visibleText } from "../display-name.js";
import { el, replace } from "../dom.js";
import { oidcLogout } from "../server/oidc.js";
import { session } from "../session.js";
import { CONSENT_ARMING_MS, requestParameters } from "./authorize.js";

/**
 * Runs the logout request in `app`. `endHere()` signs this page out (its session ended on the server, the
 * binding forgotten, the other tabs told) without showing the sign-in screen.
 */
export async function logoutScreen(app, { endHere }) {
  const parameters = requestParameters();
  const section = el("section", { class: "card authorize", "aria-label": "Sign out of an application" });
  replace(app, section);
  replace(section, el("h1", {}, "Signing out…"), el("p", { role: "status", class: "status" }, "Asking Countersign…"));
  let answer;
  try {
    answer = await oidcLogout({ parameters }, session.token ?? null);
  } catch (error) {
    return done(section, "Could not reach Countersign", describe(error), { alert: true });
  }
  if (answer.action === "error") {
    return done(
      section,
      "This sign-out link doesn't work",
      "The application sent you here with a request Countersign cannot accept, so nothing was changed and you " +
        "were not sent anywhere. Go back to the application; it has signed you out of itself.",
      { alert: true, details: answer.errorDescription ?? answer.error },
    );
  }
  const name = visibleText(answer.clientName ?? "The application");
  const back = () => (answer.location ? location.replace(answer.location) : location.assign("/#/home"));
  if (!session.token) {
    if (answer.location) return location.replace(answer.location);
    return done(section, "You are signed out", "You are not signed in to Countersign in this browser.");
  }
  // As the consent screen's: no press counts until the question has been shown a moment (a double click or a
  // held Enter meant for the page before).
  const signOutButton = el("button", { type: "button", class: "primary", disabled: true }, "Sign out of Countersign");
  const stay = el("button", { type: "button", disabled: true }, "Stay signed in");
  setTimeout(() => {
    signOutButton.disabled = false;
    stay.disabled = false;
  }, CONSENT_ARMING_MS);
  const heading = el("h1", { tabindex: "-1" }, `${name} signed you out`);
  replace(
    section,
    heading,
    el(
      "p",
      {},
      `Sign out of Countersign in this browser too? Other applications you signed in to with Countersign here are ` +
        `signed out as well.`,
    ),
    answer.otherAccount
      ? el("p", { class: "notice" }, `${name} signed out another account than ${session.account.username}.`)
      : null,
    el("div", { class: "actions" }, signOutButton, stay),
  );
  heading.focus();
  stay.addEventListener("click", back);
  signOutButton.addEventListener("click", async () => {
    signOutButton.disabled = true;
    stay.disabled = true;
    try {
      const ended = await oidcLogout({ parameters, signOut: true }, session.token);
      await endHere();
      if (ended.location) return location.replace(ended.location);
      done(section, "You are signed out", "You are signed out of Countersign in this browser.");
    } catch (error) {
      signOutButton.disabled = false;
      stay.disabled = false;
      replace(section, heading, el("p", { role: "alert", class: "alert" }, `Not signed out: ${describe(error)}`),
        el("div", { class: "actions" }, signOutButton, stay));
    }
  });
}

function done(section, heading, words, { alert = false, details } = {}) {
  replace(
    section,
    el("h1", {}, heading),
    el("p", alert ? { role: "alert", class: "alert" } : { role: "status" }, words),
    details ? el("details", {}, el("summary", {}, "Technical details"), el("p", { class: "muted" }, details)) : null,
    el("div", { class: "actions" }, el("a", { href: "/" }, "Go to Countersign")),
  );
}
