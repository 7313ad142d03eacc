// The browser's brand and system, for the names this browser gives itself on the account (a device, an
// authenticator) and for the audit log's "From".

/** The browser's brand in a user agent string ("Chrome"), "Browser" when none is known. */
export function browserBrand(userAgent) {
  if (/Edg\//.test(userAgent)) return "Edge";
  if (/Firefox\//.test(userAgent)) return "Firefox";
  if (/Chrome\//.test(userAgent)) return "Chrome";
  if (/Safari\//.test(userAgent)) return "Safari";
  return "Browser";
}

/** The system as a person names it ("Linux", "macOS", "iPhone"), from the user agent, else the platform. */
export function systemName(userAgent, platform = "") {
  const known = [
    [/iPhone/, "iPhone"],
    [/iPad/, "iPad"],
    [/Android/, "Android"],
    [/CrOS/, "ChromeOS"],
    [/Windows|Win32|Win64/, "Windows"],
    [/Mac OS X|Macintosh/, "macOS"],
    [/Linux|X11/, "Linux"],
  ];
  for (const [pattern, name] of known) if (pattern.test(userAgent) || pattern.test(platform)) return name;
  return "the web";
}

/** "Chrome on Linux": a user agent in words (the audit log's "From", a device's default name). */
export const agentWords = (userAgent, platform = "") =>
  `${browserBrand(userAgent)} on ${systemName(userAgent, platform)}`;

/** A name for this browser as a new device: "Chrome on Linux", "Chrome on Linux 2" when `taken` has it. */
export function deviceName(userAgent, platform, taken = []) {
  const base = agentWords(userAgent, platform).slice(0, 60);
  const names = new Set(taken);
  if (!names.has(base)) return base;
  let n = 2;
  while (names.has(`${base} ${n}`)) n += 1;
  return `${base} ${n}`;
}
