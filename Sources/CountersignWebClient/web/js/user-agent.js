// The browser's brand, for the names this browser gives itself on the account (a device, an authenticator).

/** The browser's brand in a user agent string ("Chrome"), "Browser" when none is known. */
export function browserBrand(userAgent) {
  if (/Edg\//.test(userAgent)) return "Edge";
  if (/Firefox\//.test(userAgent)) return "Firefox";
  if (/Chrome\//.test(userAgent)) return "Chrome";
  if (/Safari\//.test(userAgent)) return "Safari";
  return "Browser";
}
