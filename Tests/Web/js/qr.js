// QR codes drawn by the page, for Tests/Web/tests_two_factor.py to read back with zbarimg. (How these files are
// run: page.js.)

/** Draws each [text, options] as the page does, 3 px a module, in a box of its own; returns each version. */
async function drawQrCodes(cases) {
  const { qrCode } = await import("/js/qr.js");
  const box = document.createElement("div");
  box.id = "qr-test";
  document.body.append(box);
  return cases.map(([text, options], i) => {
    const svg = qrCode(text, { label: `QR code of test ${i}`, ...options });
    // 3 px per module (CSSOM, which the CSP allows): small symbols and version 40 alike.
    const side = Number(svg.getAttribute("viewBox").split(" ")[2]) * 3;
    svg.style.width = svg.style.height = `${side}px`;
    svg.style.maxWidth = "none";
    box.append(svg);
    return Number(svg.dataset.version);
  });
}

/** What `n` bytes too many for version 40, and a QR code without a label, throw: [name, name]. */
async function qrRefusals(n) {
  const { encode, qrCode } = await import("/js/qr.js");
  const out = [];
  try {
    encode("a".repeat(n));
    out.push("fits");
  } catch (e) {
    out.push(e.name);
  }
  try {
    qrCode("x");
    out.push("made");
  } catch (e) {
    out.push(e.name);
  }
  return out;
}
