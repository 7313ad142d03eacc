// How long until a delayed sign-in is allowed again, as a person says it: "Try again in 30 minutes (at 00:43)."

/** `ms` as "45 seconds", "30 minutes", "1 hour 5 minutes": rounded up, so "in 1 minute" never comes early. */
export function durationWords(ms) {
  const plural = (n, unit) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  if (seconds < 60) return plural(seconds, "second");
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return plural(minutes, "minute");
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest ? `${plural(hours, "hour")} ${plural(rest, "minute")}` : plural(hours, "hour");
}

/** The clock time of `at` as "00:43" (24-hour, the reader's time zone unless `timeZone` is given). */
export function clockWords(at, timeZone) {
  return new Date(at).toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone });
}

/** "Try again in 30 minutes (at 00:43)." for a retry allowed at `retryAt` (ms since the epoch), from `now`. */
export function retryWords(retryAt, now = Date.now(), timeZone = undefined) {
  return `Try again in ${durationWords(retryAt - now)} (at ${clockWords(retryAt, timeZone)}).`;
}
