// Elements made from data, never from HTML strings: text goes in as text (textContent), so nothing a
// server or a sender supplies can become markup or script.

/** el("button", {type: "submit"}, "Sign in") → a <button>. Attributes are set as attributes; `on`
 *  takes event listeners; children are nodes or strings (made text nodes). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "on") {
      for (const [event, listener] of Object.entries(value)) node.addEventListener(event, listener);
    } else if (value === true) {
      node.setAttribute(name, "");
    } else if (value !== false && value !== undefined && value !== null) {
      node.setAttribute(name, String(value));
    }
  }
  append(node, ...children);
  return node;
}

export function append(node, ...children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** Replaces a node's children. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, ...children);
}

/**
 * Shows a screen in `container`: a card section named `label` for screen readers and tests, headed by
 * `heading` (the label unless given), with `children` after the heading. `className` adds to "card".
 */
export function showCard(container, { label, heading = label, className = "" }, ...children) {
  const attributes = { "aria-label": label, class: className ? `card ${className}` : "card" };
  return replace(container, el("section", attributes, el("h1", {}, heading), ...children));
}

/**
 * A part of a screen's feedback: a status and an alert, placed by its actions, that take focus when they
 * come to say something (a screen reader reads it, the page shows it), unless the person is typing in a
 * field then (a prompt that asks for a password keeps its focus).
 */
export function feedback() {
  const status = el("p", { role: "status", class: "status", tabindex: "-1" });
  const alert = el("p", { role: "alert", class: "alert", tabindex: "-1" });
  for (const node of [status, alert]) {
    // Only when it starts to say something: a progress line updated in place does not pull the focus again.
    let said = "";
    new MutationObserver(() => {
      const was = said;
      said = node.textContent;
      if (!said || was || !node.isConnected) return;
      if (document.activeElement?.matches("input, textarea, select, [contenteditable]")) return;
      node.focus({ preventScroll: true });
      node.scrollIntoView({ block: "nearest" });
    }).observe(node, { childList: true, characterData: true, subtree: true });
  }
  return { status, alert };
}

/**
 * Feedback follows the action: a click or a submit inside `area` first moves `said` (a `feedback()`'s status
 * and alert) to just after `anchor`, so what the action says appears where the person is looking. `anchor`
 * must outlive what the action re-renders (a list, not one of its items).
 */
export function speakBeside(said, area, anchor = area) {
  const move = () => {
    if (anchor.isConnected && anchor.nextElementSibling !== said.status) anchor.after(said.status, said.alert);
  };
  area.addEventListener("click", move, true);
  area.addEventListener("submit", move, true);
}

/** A screen's "Back" button, calling `onBack`. */
export const backButton = (onBack) => el("button", { type: "button", on: { click: onBack } }, "Back");

/** An input's value, the input emptied: a typed password does not stay in the page. */
export function takeValue(input) {
  const value = input.value;
  input.value = "";
  return value;
}

let ids = 0;
/** A labelled input: the label names the control for screen readers and for tests. */
export function field(label, attributes = {}, hint = null) {
  const id = `f${++ids}`;
  // A rule shown before it is broken (the input's description, read out with it).
  const said = hint ? el("p", { class: "muted hint", id: `${id}-hint` }, hint) : null;
  const input = el("input", { id, ...attributes, ...(said && { "aria-describedby": said.id }) });
  return { row: el("div", { class: "field" }, el("label", { for: id }, label), input, said), input };
}
