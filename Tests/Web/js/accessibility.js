// What assistive technology meets in the page. (How these files are run: page.js.)

/** Every visible control without a name (aria-label, label, text or title), by its first 100 characters. */
function namelessControls() {
  return [...document.querySelectorAll("button, input, textarea, select, a[href], [role=switch]")]
    .filter((e) => !e.closest("[hidden]"))
    .filter(
      (e) =>
        !(
          e.getAttribute("aria-label") ||
          [...(e.labels || [])].map((l) => l.textContent).join(" ") ||
          e.textContent ||
          e.title ||
          ""
        ).trim(),
    )
    .map((e) => e.outerHTML.slice(0, 100));
}
