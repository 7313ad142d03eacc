// The server's HTTP API: JSON in and out, problems (RFC 9457) turned into ApiError with the server's own
// words. Credentials travel only in the Authorization header, never in cookies, so another site cannot
// make the browser send them (no cross-site request forgery). Each endpoint is a function of the server
// layer (js/server/), built on `call`; nothing else names a URL.
import { emit } from "./events.js";
import { session } from "./session.js";
import { durationWords, retryWords } from "./wait-words.js";

export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    super(problem.detail || problem.title || `The server answered ${status}.`);
    this.status = status;
    this.code = problem.code || "";
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

/** The server's answer to a token that names no (live) session. */
export const namesNoSession = (error) =>
  error instanceof ApiError && error.status === 401 && error.code === "unauthenticated";

/** `path` with a query of the `params` that are not undefined, in their order: `?after=0&wait=25`. */
export function query(path, params) {
  const given = Object.entries(params).filter(([, value]) => value !== undefined);
  if (!given.length) return path;
  return `${path}?${given.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join("&")}`;
}

// Renews this page's account session when a call finds it gone (main.js: from the saved binding,
// stay-signed-in.js): resolves with the new token, or null.
let renewSession = null;
export const setSessionRenewer = (renew) => (renewSession = renew);

export async function call(method, path, { json, token, renewed = false } = {}) {
  const headers = { Accept: "application/json" };
  if (json !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: json === undefined ? undefined : JSON.stringify(json),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, { detail: "The server cannot be reached. Check your connection and try again." });
  }
  const text = await response.text();
  let body = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (!response.ok && response.status !== 202) {
    const retry = Number(response.headers.get("Retry-After"));
    const error = new ApiError(response.status, body || {}, Number.isFinite(retry) && retry > 0 ? retry : undefined);
    // This page's account session is gone (idle, expired, or ended elsewhere): renewed once from this
    // browser's binding and the call made again; else main.js signs out, saying so. A device session's
    // token is never this one.
    if (token && token === session.token && namesNoSession(error)) {
      const fresh = renewed ? null : await renewSession?.();
      if (fresh && fresh !== token) return call(method, path, { json, token: fresh, renewed: true });
      emit("session-ended");
    }
    throw error;
  }
  return { status: response.status, body };
}

/** This page's account session has ended: nothing of it should go on (a push channel stops, not retries). */
export class SignedOutError extends Error {
  constructor() {
    super("Signed out.");
    this.name = "SignedOutError";
  }
}

/** What to tell the user about a failed call: the server's words, with when to retry if it said so. */
export function describe(error) {
  if (!(error instanceof ApiError)) return error?.message || String(error);
  const { problem } = error;
  const retryAt = Date.parse(problem.retryAt ?? "");
  if (Number.isFinite(retryAt)) {
    const lead = problem.code === "invalid-credentials"
      ? "The username or password is wrong, and that was too many failures."
      : "Too many failed sign-ins.";
    const last = problem.oneMoreLocks ? " One more failure locks the account." : "";
    return `${lead} ${retryWords(retryAt)}${last}`;
  }
  if (error.retryAfter && !/\d/.test(error.message)) {
    return `${error.message} Try again in ${durationWords(error.retryAfter * 1000)}.`;
  }
  return error.message;
}
