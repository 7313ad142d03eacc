// A QR sign-in's authentication code (docs/PROTOCOL.md §3.9) as an authenticator reads it: typed, or
// scanned as the QR code's URI. Pure: no DOM, no storage, no network (the page's origin is read from
// `location`).
import { printable } from "../display-name.js";

// The code alphabet of PROTOCOL §3.1 (no 0/O, 1/I/L), 8 symbols.
const AUTH_CODE = /^[2-9A-HJKMNP-Z]{8}$/;

/** The origin of a URL as given, or the text itself when it is not one. */
function originOf(server) {
  try {
    return new URL(server).origin;
  } catch {
    return server;
  }
}

/**
 * The 8 characters of a QR sign-in code from what was typed or scanned: the code bare (any case, spaces
 * and dashes ignored) or the QR code's URI (`countersign://auth?authentication_code=…&server=…`). Throws
 * with words when it is neither, or when the URI names another server than this page's.
 */
export function authCodeFrom(input) {
  const given = String(input).trim();
  let bare = given;
  if (/^[a-z][a-z0-9+.-]*:/i.test(given)) {
    let url;
    try {
      url = new URL(given);
    } catch {
      throw new Error("This is not a sign-in code: type the 8 characters under the QR code.");
    }
    const server = url.searchParams.get("server");
    if (server && originOf(server) !== location.origin) {
      throw new Error(
        `This code is for another server (${printable(server)}), not this one: ` +
          "sign in there with its own authenticator.",
      );
    }
    bare = url.searchParams.get("authentication_code") ?? "";
  }
  const code = bare.replace(/[\s-]/g, "").toUpperCase();
  if (!AUTH_CODE.test(code)) {
    throw new Error("A sign-in code is 8 letters and digits, as the sign-in page shows them (like ABCD-2345).");
  }
  return code;
}
