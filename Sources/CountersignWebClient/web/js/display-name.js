// Text another user (or the server) chose, as this page shows it: usernames, device names, sender names,
// authenticator names. A name may hold bidirectional controls (U+202E made "evil" read "live") or invisible
// characters (two names that look the same); here each such character is shown as what it is, "<U+202E>",
// and the name is isolated from the text around it (a <bdi>, or dir="auto"), so it cannot reorder that
// text either. The result is always text (textContent), never HTML.

/**
 * Characters shown escaped: controls (Cc), format characters (Cf: the bidi controls U+200E, U+200F,
 * U+202A–U+202E, U+2066–U+2069 and U+061C, zero-width spaces and joiners, U+FEFF, tags…), line and
 * paragraph separators, and the rest of Unicode's default-ignorable code points (Hangul fillers, variation
 * selectors, U+034F…), which show as nothing.
 */
const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

/** Spaces other than the plain one (no-break, em, thin, ideographic…): "bob\u2003" would pass for "bob ". */
const oddSpace = /[^\P{Zs} ]/u;

/** Combining marks past this many on one letter are escaped: a stack of them draws over the lines around. */
const maxMarks = 3;
const mark = /\p{M}/u;

// An emoji with its own presentation selector or skin tone, and emoji joined into one (a family, a
// profession): the joiner and selector there are how the emoji is written, not hidden text.
const pictograph = String.raw`\p{Extended_Pictographic}(?:\uFE0F|\p{Emoji_Modifier})?`;
const emoji = new RegExp(String.raw`${pictograph}(?:\u200D${pictograph})*`, "uy");

const escape = (char) => `<U+${char.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`;

/**
 * `text` with every bidirectional control and invisible character written out as "<U+XXXX>": nothing in
 * it can reorder or hide what is shown. Emoji sequences stay as they are. Not for identity: compare the
 * names themselves.
 */
export function visibleText(text) {
  const s = String(text ?? "");
  let out = "";
  let marks = 0;
  for (let i = 0; i < s.length; ) {
    emoji.lastIndex = i;
    const match = emoji.exec(s);
    if (match) {
      out += match[0];
      i += match[0].length;
      marks = 0;
      continue;
    }
    const char = String.fromCodePoint(s.codePointAt(i));
    marks = mark.test(char) ? marks + 1 : 0;
    out += hidden.test(char) || oddSpace.test(char) || marks > maxMarks ? escape(char) : char;
    i += char.length;
  }
  return out;
}

/** Text someone else chose (a name, a file name), without control or formatting characters: no bidi
 *  override can make "evil\u202Etxt.exe" read as "evilexe.txt". */
export const printable = (text) => String(text).replace(/[\p{Cc}\p{Cf}]/gu, "");

/** Whether `visibleText(text)` changes anything: the name held hidden or reordering characters. */
export const hasHiddenCharacters = (text) => visibleText(text) !== String(text ?? "");

/**
 * A name in the page: a <bdi> (its direction its own, isolated from the text around it) holding
 * `visibleText(text)` as text, with `title` saying what was escaped.
 */
export function nameElement(text, attributes = {}) {
  const node = document.createElement("bdi");
  node.className = "peer-name";
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.textContent = visibleText(text);
  if (hasHiddenCharacters(text)) {
    node.classList.add("escaped");
    node.title = "This name holds invisible or direction-changing characters, shown here as <U+…>.";
  }
  return node;
}
