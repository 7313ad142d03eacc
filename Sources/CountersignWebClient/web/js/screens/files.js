// Files (FileLock's three tabs in the seed's words and order): "Encrypt File" to a recipient's public key .pem,
// "Decrypt File" with this account's file key, and "Keys" to make, import and hand out that key.
// Countersign's sealed format is the default (streamed, any size); FileLock's package is offered for
// the iOS app (held in memory, up to 256 MiB). Results are saved as Blob downloads.
import { describe } from "../api.js";
import { groupedKeyId, hex } from "../bytes.js";
import { printable } from "../display-name.js";
import { el, feedback, field, replace, showCard, speakBeside } from "../dom.js";
import { on } from "../events.js";
import { fileKeys, generateIdentity, importIdentity } from "../file-keys.js";
import * as filelock from "../filelock.js";
import { fingerprintText, keyIdOf, parsePublicKey, publicPEM } from "../pem.js";
import { isEncrypted } from "../pkcs8.js";
import { MESSAGES } from "../seal-error.js";
import * as sealed from "../sealed-file.js";
import { session } from "../session.js";

const MiB = 1024 * 1024;
// Above this, output is streamed to a file the user picks where the browser can (File System Access
// API, Chromium): a Blob of that size is the browser's to hold, in memory before it pages to disk.
const LARGE = 256 * MiB;

/** Asks where to save, synchronously within the click (the picker needs the user's gesture); null
 *  where the browser has no picker or the file is small (a Blob download then). */
function pickTarget(size, suggestedName) {
  if (size <= LARGE || !window.showSaveFilePicker) return null;
  return window.showSaveFilePicker({ suggestedName }).then(
    async (handle) => ({ handle, writable: await handle.createWritable() }),
  );
}

/** Gives up a picked target: what was written is discarded and the (empty) file the picker made removed. */
async function discard(target) {
  const picked = await target?.catch(() => null);
  if (!picked) return;
  await picked.writable.abort().catch(() => {});
  await picked.handle.remove?.().catch(() => {});
}
const size = (n) => (n >= MiB ? `${(n / MiB).toFixed(1)} MiB` : `${n} bytes`);
const readBytes = async (file) => new Uint8Array(await file.arrayBuffer());

/** What to tell the user about a refusal: the spec's class in words, then the detail. */
function explain(error) {
  if (error?.kind && MESSAGES[error.kind] && !error.message.includes(MESSAGES[error.kind])) {
    return `${error.message.replace(/^[^:]+: /, `${error.kind}: `)} (${MESSAGES[error.kind]})`;
  }
  return describe(error);
}

/** Offers `blob` as a download named `name`: clicked for the user, and left on screen as a link. */
function offer(slot, blob, name, label) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: name, class: "download" }, label);
  replace(slot, link);
  link.click();
  return () => {
    URL.revokeObjectURL(url);
    slot.replaceChildren();
  };
}

/** A form's busy state: buttons disabled, a progress bar, a status line and a Cancel button. */
function progressUI(label, cancelLabel) {
  const bar = el("progress", { max: 100, value: 0, "aria-label": label, hidden: true });
  // Under the form's buttons, taking the focus when they start to say something (the button is disabled
  // while the work runs).
  const { status, alert } = feedback();
  const result = el("div", { class: "result" });
  const cancel = el("button", { type: "button", hidden: true, "aria-label": cancelLabel }, "Cancel");
  let controller = null;
  cancel.addEventListener("click", () => controller?.abort());
  return {
    bar,
    status,
    alert,
    result,
    cancel,
    start(text) {
      controller = new AbortController();
      alert.textContent = "";
      status.textContent = text;
      bar.value = 0;
      bar.hidden = false;
      cancel.hidden = false;
      return controller.signal;
    },
    /** A progress callback for the operation just started: silent once it is cancelled (it may run on
     *  to its next batch) or another has started. */
    progress(verb) {
      const signal = controller.signal;
      return (done, total) => {
        if (signal.aborted || signal !== controller.signal) return;
        const pct = total ? Math.floor((done / total) * 100) : 100;
        bar.value = pct;
        status.textContent = `${verb}… ${pct} %`;
      };
    },
    /** `work`'s result, or a rejection as soon as Cancel is pressed: the work itself stops at its
     *  next batch, and what it made is dropped. */
    until(work) {
      const signal = controller.signal;
      work.catch(() => {});
      const cancelled = new Promise((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
      return Promise.race([work, cancelled]);
    },
    /** Whether the running (or last) operation was cancelled. */
    get cancelled() {
      return Boolean(controller?.signal.aborted);
    },
    /** Says why `what` ("Encryption", "Decryption") saved nothing: it was cancelled, no place to save was
     *  chosen, or `error`. */
    notSaved(what, error) {
      const cancelled = Boolean(controller?.signal.aborted);
      status.textContent = cancelled ? `${what} cancelled: nothing was saved.` : "";
      if (cancelled) return;
      const noPlace = error?.name === "AbortError";
      alert.textContent = noPlace ? "Not saved: no place to save was chosen." : `${what} Failed: ${explain(error)}`;
    },
    /** Cancels the running operation, if any (the screen is left). */
    abort() {
      controller?.abort();
    },
    end() {
      bar.hidden = true;
      cancel.hidden = true;
    },
  };
}

/** The tabs in FileLock's order (its segments: "Encrypt", "Decrypt", "Keys"): address, name. */
const TABS = [
  ["encrypt", "Encrypt"],
  ["decrypt", "Decrypt"],
  ["keys", "Keys"],
];

/**
 * FileLock's segments as tabs (the WAI-ARIA pattern: arrow keys move between them), one panel shown; the
 * address follows the tab (#/files/keys) without a history entry, so Back still leaves the screen.
 */
function tabbed(panels, selected) {
  const tabs = [];
  const wrappers = [];
  const show = (index, focus = false) => {
    tabs.forEach((tab, i) => {
      tab.setAttribute("aria-selected", String(i === index));
      tab.tabIndex = i === index ? 0 : -1;
      wrappers[i].hidden = i !== index;
    });
    if (focus) tabs[index].focus();
    history.replaceState(null, "", `#/files/${TABS[index][0]}`);
  };
  TABS.forEach(([id, name], index) => {
    const attributes = { type: "button", role: "tab", id: `files-tab-${id}`, "aria-controls": `files-${id}` };
    const tab = el("button", attributes, name);
    tab.addEventListener("click", () => show(index));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step) show((index + step + TABS.length) % TABS.length, true);
    });
    tabs.push(tab);
    wrappers.push(el("div", { role: "tabpanel", id: `files-${id}`, "aria-labelledby": tab.id }, panels[id]));
  });
  const start = Math.max(0, TABS.findIndex(([id]) => id === selected));
  const list = el("div", { role: "tablist", "aria-label": "Files", class: "tabs" }, tabs);
  // Shown once the screen is on the page (replaceState then names this screen's address).
  return { list, wrappers, start: () => show(start) };
}

export function filesScreen(app, { onBack, id: selectedTab }) {
  const accountId = session.account.id;
  let key = null; // this account's file key, once loaded
  const cleanups = [];

  // Encrypt
  const source = field("File to encrypt", { type: "file" });
  const recipientFile = field("Recipient's public key", {
    type: "file",
    accept: ".pem,.pub,application/x-pem-file",
    multiple: true,
  });
  const formatCountersign = el("input", {
    type: "radio",
    name: "format",
    id: "format-countersign",
    value: "countersign",
    checked: true,
  });
  const formatFilelock = el("input", { type: "radio", name: "format", id: "format-filelock", value: "filelock" });
  const sign = el("input", {
    type: "checkbox",
    id: "sign-as-me",
    disabled: true,
    "aria-describedby": "sign-as-me-hint",
  });
  const signHint = el("p", { class: "muted", id: "sign-as-me-hint", hidden: true });
  const keepName = el("input", { type: "checkbox", id: "keep-name", checked: true });
  const encryptButton = el("button", { type: "submit", class: "primary" }, "Encrypt & Save File");
  const enc = progressUI("Encryption progress", "Cancel encryption");
  const encryptForm = el(
    "form",
    { "aria-label": "Encrypt File", class: "panel" },
    el("h2", {}, "Encrypt File"),
    el("p", { class: "step" }, "1. Select File to Encrypt"),
    source.row,
    el("p", { class: "step" }, "2. Select Recipient's Public Key"),
    recipientFile.row,
    el(
      "fieldset",
      {},
      el("legend", {}, "Format"),
      el(
        "div",
        { class: "choice" },
        formatCountersign,
        el("label", { for: "format-countersign" }, "Countersign (streamed, any size)"),
      ),
      el(
        "div",
        { class: "choice" },
        formatFilelock,
        el("label", { for: "format-filelock" }, "FileLock (the iOS app; one recipient, up to 256 MiB)"),
      ),
    ),
    el(
      "div",
      { class: "choice" },
      keepName,
      el("label", { for: "keep-name" }, "Carry the file name inside the encryption"),
    ),
    el("div", { class: "choice" }, sign, el("label", { for: "sign-as-me" }, "Sign with my file key")),
    signHint,
    el("div", { class: "actions" }, encryptButton, enc.cancel),
    enc.bar,
    enc.status,
    enc.alert,
    enc.result,
  );
  const syncOptions = () => {
    const fl = formatFilelock.checked;
    keepName.disabled = fl;
    sign.disabled = fl || !key;
    if (sign.disabled) sign.checked = false;
    // Why it cannot be ticked, when it cannot.
    signHint.textContent = fl
      ? "FileLock files carry no signature."
      : key
        ? ""
        : "To sign, make or import a file key under Keys.";
    signHint.hidden = !signHint.textContent;
  };
  encryptForm.addEventListener("change", () => (enc.alert.textContent = ""));
  formatCountersign.addEventListener("change", syncOptions);
  formatFilelock.addEventListener("change", syncOptions);

  // The last encrypted file's link: replaced by the next run's result (or by nothing, when it fails).
  let dropEncrypted = null;
  cleanups.push(() => dropEncrypted?.());
  encryptForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    enc.alert.textContent = "";
    dropEncrypted?.();
    dropEncrypted = null;
    const file = source.input.files[0];
    const pems = [...recipientFile.input.files];
    if (!file || !pems.length) {
      enc.alert.textContent = "Missing Files: Please select both the source file and the public key.";
      return;
    }
    const asFileLock = formatFilelock.checked;
    if (asFileLock && pems.length !== 1) {
      enc.alert.textContent = "A FileLock package has exactly one recipient: choose one public key, or the " +
        "Countersign format.";
      return;
    }
    if (asFileLock && file.size > filelock.MAX_PLAINTEXT) {
      enc.alert.textContent = `too large: the FileLock format is held in memory and limited to 256 MiB; this file ` +
        `is ${size(file.size)}. Choose the Countersign format.`;
      return;
    }
    const target = asFileLock ? null : pickTarget(file.size, `${file.name}.cs`);
    encryptButton.disabled = true;
    const signal = enc.start("Reading the public key…");
    let writable = null;
    try {
      const recipients = [];
      for (const pem of pems) {
        try {
          recipients.push(await parsePublicKey(await pem.text()));
        } catch (error) {
          throw new Error(`Invalid public key (${pem.name}): ${error.message}`);
        }
      }
      let blob, name;
      const started = performance.now();
      if (asFileLock) {
        enc.status.textContent = "Encrypting…";
        const sealedBytes = await enc.until(readBytes(file).then((bytes) => filelock.seal(bytes, recipients[0])));
        blob = new Blob([sealedBytes], { type: "application/octet-stream" });
        // The original name and extension kept (FileLock wrote encrypted_file.pkg, and decrypted to .jpg).
        name = `${file.name}.pkg`;
      } else {
        writable = target ? new sealed.FileSink(await enc.until(target)) : null;
        blob = await enc.until(
          sealed.seal(file, {
            recipients,
            signer: sign.checked ? key : null,
            fileName: keepName.checked ? file.name : "",
            sink: writable,
            signal,
            onProgress: enc.progress("Encrypting"),
          }),
        );
        name = `${file.name}.cs`;
      }
      const seconds = (performance.now() - started) / 1000;
      if (writable) {
        await enc.until(writable.close());
        writable = null;
      } else {
        dropEncrypted = offer(enc.result, blob, name, `Save ${name} again`);
      }
      enc.status.textContent = `Encrypted ${file.name} (${size(file.size)}) in ${seconds.toFixed(1)} ` +
        `s${sign.checked && !asFileLock ? ", signed" : ""}. Saved as ${name}.`;
    } catch (error) {
      // A place was asked for but nothing written: discard it too.
      await (writable ? writable.abort() : discard(target));
      enc.notSaved("Encryption", error);
    } finally {
      enc.end();
      encryptButton.disabled = false;
    }
  });

  // Decrypt
  const sealedFile = field("Encrypted file", { type: "file" });
  const senderFile = field("Sender's public key (optional: demand their signature)", {
    type: "file",
    accept: ".pem,.pub,application/x-pem-file",
  });
  const decryptButton = el("button", { type: "submit", class: "primary" }, "Decrypt & Save File");
  const dec = progressUI("Decryption progress", "Cancel decryption");
  let dropDecrypted = null;
  const decryptForm = el(
    "form",
    { "aria-label": "Decrypt File", class: "panel" },
    el("h2", {}, "Decrypt File"),
    el("p", { class: "step" }, "Select Encrypted File"),
    sealedFile.row,
    senderFile.row,
    el(
      "p",
      { class: "muted" },
      "Nothing is saved until the whole file has been checked: every chunk, its end and the sender's signature. A " +
        "tampered, cut or wrongly addressed file gives no output at all, not even a part.",
    ),
    el("div", { class: "actions" }, decryptButton, dec.cancel),
    dec.bar,
    dec.status,
    dec.alert,
    dec.result,
  );
  decryptForm.addEventListener("change", () => (dec.alert.textContent = ""));
  // Decrypted output is dropped from the page when it is hidden (the privacy overlay's rule).
  cleanups.push(on("drop-decrypted", () => dropDecrypted?.()));

  /** The second pass of a large file, into a file picked on this button's click (the picker needs the
   *  gesture): the file was checked whole; a change on disk since then is refused by the browser. */
  function offerLarge(file, { expectedSender, name, note }) {
    const save = el("button", { type: "button", class: "primary" }, `Save ${name}…`);
    replace(dec.result, save);
    dropDecrypted = () => dec.result.replaceChildren();
    save.addEventListener("click", async () => {
      const target = pickTarget(file.size, name);
      let sink = null;
      save.disabled = true;
      decryptButton.disabled = true;
      dec.alert.textContent = "";
      const signal = dec.start("Decrypting…");
      try {
        sink = new sealed.FileSink(await dec.until(target));
        await dec.until(
          sealed.open(file, { identity: key, expectedSender, sink, signal, onProgress: dec.progress("Decrypting") }),
        );
        // Only now does the chosen file appear.
        await dec.until(sink.close());
        sink = null;
        dec.result.replaceChildren();
        dec.status.textContent = `Decrypted and saved where you chose (${size(file.size)} sealed). ${note}`;
      } catch (error) {
        await (sink ? sink.abort() : discard(target));
        dec.notSaved("Decryption", error);
      } finally {
        dec.end();
        save.disabled = false;
        decryptButton.disabled = false;
      }
    });
  }

  decryptForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    dec.alert.textContent = "";
    dropDecrypted?.();
    const file = sealedFile.input.files[0];
    if (!file) {
      dec.alert.textContent = "No File: Please select an encrypted file first.";
      return;
    }
    if (!key) {
      dec.alert.textContent = "No key: make or import your file key under Keys first.";
      return;
    }
    // A file this large can only be a sealed file (FileLock packages stop at 256 MiB): it is checked
    // whole first, and only then decrypted again into a file the user picks.
    const large = file.size > LARGE && Boolean(window.showSaveFilePicker);
    decryptButton.disabled = true;
    const signal = dec.start("Checking…");
    let opened = null;
    try {
      const expectedSender = senderFile.input.files[0]
        ? await parsePublicKey(await senderFile.input.files[0].text())
        : null;
      const format = sealed.detect(await readBytes(file.slice(0, 8)));
      const base = file.name.replace(/\.(cs|pkg)$/i, "");
      let blob, name, note;
      if (format === "filelock") {
        if (expectedSender) throw new Error("A FileLock package carries no signature, so it cannot show who sent it.");
        if (file.size > filelock.MAX_PLAINTEXT + 157)
          throw new Error("too large: the FileLock format is held in memory and limited to 256 MiB");
        blob = new Blob([await dec.until(readBytes(file).then((bytes) => filelock.open(bytes, key)))], {
          type: "application/octet-stream",
        });
        name = base === "encrypted_file" || base === file.name ? "decrypted_file" : base;
        note = "FileLock package: not signed.";
      } else {
        const sink = large ? new sealed.CheckSink() : new sealed.BlobSink();
        opened = await dec.until(
          sealed.open(file, {
            identity: key,
            expectedSender,
            sink,
            signal,
            onProgress: dec.progress(large ? "Checking" : "Decrypting and checking"),
          }),
        );
        blob = large ? null : opened.sink.blob();
        // The sender chose the name: shown and saved without control or bidi characters.
        name = opened.fileName
          ? printable(opened.fileName) || "decrypted_file"
          : base === file.name ? "decrypted_file" : base;
        note = opened.signer ? `Signed by ${fingerprintText(await keyIdOf(opened.signer))}.` : "Not signed.";
      }
      if (large) {
        if (document.visibilityState !== "visible")
          throw new Error("The page was hidden while checking: decrypt again to save.");
        dec.status.textContent = `Checked: every chunk, the end${opened.signer ? " and the signature" : ""} ` +
          `hold. ${note} Choose where to save it.`;
        offerLarge(file, { expectedSender, name, note });
      } else {
        // Finished while the page was hidden: the privacy overlay's rule drops it rather than show it.
        if (document.visibilityState !== "visible")
          throw new Error("The page was hidden while decrypting: decrypt again to see it.");
        dropDecrypted = offer(dec.result, blob, name, `Save ${name} again`);
        dec.status.textContent = `Decrypted ${name} (${size(blob.size)}). ${note}`;
      }
    } catch (error) {
      dec.status.textContent = dec.cancelled ? "Decryption cancelled: nothing was decrypted or saved." : "";
      if (!dec.cancelled) dec.alert.textContent = `Decryption Failed: ${explain(error)}`;
    } finally {
      dec.end();
      decryptButton.disabled = false;
    }
  });

  // Keys
  const keyFacts = el("dl", { class: "facts", "aria-label": "Your file key" });
  // One status and one alert for the keys, moved beside the buttons pressed last (speakBeside).
  const keySaid = feedback();
  const { status: keyStatus, alert: keyAlert } = keySaid;
  const generate = el("button", { type: "button", class: "primary" }, "Generate New Key Pair");
  const confirmSlot = el("div");
  const downloadSpki = el("button", { type: "button", disabled: true }, "Download public key (SPKI PEM)");
  const downloadFileLock = el("button", { type: "button", disabled: true }, "Download public key (FileLock PEM)");
  const keyFile = field("Key file", { type: "file", accept: ".pem,.key" });
  const passphrase = field("Passphrase", { type: "password", autocomplete: "off" });
  const importButton = el("button", { type: "submit" }, "Import Key File");
  const importActions = el("div", { class: "actions" }, importButton);
  // Asking whether an imported key may replace the one kept: under the import's own button.
  const importConfirm = el("div");
  const importForm = el(
    "form",
    { "aria-label": "Import a key file", class: "panel" },
    el("h3", {}, "Import a key file"),
    el(
      "p",
      { class: "muted" },
      "A key file from `countersign keygen` (its passphrase is asked) or an OpenSSL P-256 key.",
    ),
    keyFile.row,
    passphrase.row,
    importActions,
    importConfirm,
  );
  const downloadSlot = el("div", { class: "result" });

  function showKey() {
    if (!key) {
      replace(keyFacts, el("dt", {}, "File key"), el("dd", {}, "None yet: generate one or import a key file."));
    } else {
      replace(
        keyFacts,
        el("dt", {}, "Fingerprint"),
        el("dd", { class: "mono", "data-testid": "file-key-fingerprint" }, groupedKeyId(hex(key.keyId))),
        el("dt", {}, "Origin"),
        el("dd", {}, key.origin === "imported" ? "Imported from a key file" : "Made in this browser"),
        el("dt", {}, "Created"),
        el("dd", {}, new Date(key.created).toLocaleString()),
      );
    }
    downloadSpki.disabled = downloadFileLock.disabled = !key;
    syncOptions();
  }

  async function store(identity, origin, done) {
    await fileKeys.save(accountId, identity, origin);
    key = await fileKeys.get(accountId);
    showKey();
    keyStatus.textContent = done;
  }

  async function makeKey() {
    replace(confirmSlot);
    replace(importConfirm);
    keyAlert.textContent = "";
    generate.disabled = true;
    try {
      await store(
        await generateIdentity(),
        "made",
        "New key pair generated. Download its public key and give it to whoever sends you files.",
      );
    } catch (error) {
      keyAlert.textContent = `Failed to generate key pair: ${explain(error)}`;
    } finally {
      generate.disabled = false;
    }
  }

  generate.addEventListener("click", () => {
    if (!key) return makeKey();
    // Replacing the key orphans every file sealed to it (FileLock's weakness): ask first.
    replace(
      confirmSlot,
      el(
        "div",
        { class: "confirm", role: "group", "aria-label": "Replace your file key?" },
        el(
          "p",
          {},
          `Replace your file key? Files sealed to ${fingerprintText(key.keyId)} will no longer open in this browser.`,
        ),
        el(
          "div",
          { class: "actions" },
          el("button", { type: "button", class: "danger", on: { click: makeKey } }, "Replace key"),
          el("button", { type: "button", on: { click: () => replace(confirmSlot) } }, "Cancel"),
        ),
      ),
    );
  });

  const pemDownload = (form) => () => {
    const text = publicPEM[form](key.point);
    // Named after the account and the key (FileLock's public_key.pem named every key alike).
    const stem = `${session.account.username}-${hex(key.keyId).slice(0, 8)}`;
    const name = form === "spki" ? `${stem}.pem` : `${stem}-filelock.pem`;
    cleanups.push(
      offer(downloadSlot, new Blob([text], { type: "application/x-pem-file" }), name, `Save ${name} again`),
    );
    keyStatus.textContent = `Public key saved as ${name}.`;
  };
  downloadSpki.addEventListener("click", pemDownload("spki"));
  downloadFileLock.addEventListener("click", pemDownload("filelock"));

  /** Stores an imported key; one that would replace another is stored only once the user confirms, by
   *  both fingerprints, and only if the key they were shown is still the one stored (another tab). */
  async function importOrAsk(identity) {
    const done = `Key file imported: ${fingerprintText(identity.keyId)}.`;
    const old = await fileKeys.get(accountId);
    if (!old || hex(old.keyId) === hex(identity.keyId)) return store(identity, "imported", done);
    keyStatus.textContent = "";
    const replaceButton = el("button", { type: "button", class: "danger" }, "Replace key");
    const cancel = el("button", { type: "button" }, "Cancel");
    replaceButton.addEventListener("click", async () => {
      replace(importConfirm);
      try {
        const now = await fileKeys.get(accountId);
        if (now && hex(now.keyId) !== hex(old.keyId)) return await importOrAsk(identity);
        await store(identity, "imported", done);
      } catch (error) {
        keyAlert.textContent = `Import failed: ${explain(error)}`;
      }
    });
    cancel.addEventListener("click", () => {
      replace(importConfirm);
      keyStatus.textContent = `Kept your file key ${fingerprintText(old.keyId)}; nothing was imported.`;
    });
    replace(
      importConfirm,
      el(
        "div",
        { class: "confirm", role: "group", "aria-label": "Replace your file key with the imported one?" },
        el(
          "p",
          {},
          `Replace the file key ${fingerprintText(old.keyId)} with ${fingerprintText(identity.keyId)}? Files sealed ` +
            `to the old key will no longer open in this browser (a key made here cannot be exported; an imported one ` +
            `can be imported again from its file).`,
        ),
        el("div", { class: "actions" }, replaceButton, cancel),
      ),
    );
    // The safe answer has the focus: Enter keeps the key.
    cancel.focus();
  }

  importForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    keyAlert.textContent = "";
    keyStatus.textContent = "";
    const chosen = keyFile.input.files[0];
    if (!chosen) {
      keyAlert.textContent = "Choose a key file first.";
      return;
    }
    const text = await chosen.text();
    if (isEncrypted(text) && !passphrase.input.value) {
      keyAlert.textContent = "This key file is encrypted: enter its passphrase.";
      passphrase.input.focus();
      return;
    }
    importButton.disabled = true;
    keyStatus.textContent = isEncrypted(text) ? "Unlocking the key file (scrypt)…" : "Importing…";
    try {
      const identity = await importIdentity(text, async () => new TextEncoder().encode(passphrase.input.value));
      await importOrAsk(identity);
    } catch (error) {
      keyStatus.textContent = "";
      keyAlert.textContent = `Import failed: ${explain(error)}`;
    } finally {
      // Not left in the page, right or wrong.
      passphrase.input.value = "";
      importButton.disabled = false;
    }
  });

  const keyActions = el("div", { class: "actions" }, generate, downloadSpki, downloadFileLock);
  const keysSection = el(
    "section",
    { "aria-label": "Keys", class: "panel" },
    el("h2", {}, "Keys"),
    el(
      "p",
      { class: "muted" },
      "Your file key opens files sealed to it and signs files you seal. It stays in this browser and cannot be " +
        "exported: to keep a copy elsewhere, make the key with `countersign keygen` and import it here. Warning: " +
        "generating or importing replaces any existing key you have.",
    ),
    keyFacts,
    keyActions,
    confirmSlot,
    keyStatus,
    keyAlert,
    downloadSlot,
    importForm,
  );
  speakBeside(keySaid, keyActions, confirmSlot);
  speakBeside(keySaid, confirmSlot);
  speakBeside(keySaid, importForm, importConfirm);

  const back = el("button", { type: "button" }, "Back");
  back.addEventListener("click", () => {
    // An operation still running stops: nothing it made is offered.
    enc.abort();
    dec.abort();
    for (const cleanup of cleanups) cleanup();
    dropDecrypted?.();
    onBack();
  });
  const tabs = tabbed({ encrypt: encryptForm, decrypt: decryptForm, keys: keysSection }, selectedTab);
  const actions = el("div", { class: "actions" }, back);
  showCard(app, { label: "Files", className: "files" }, actions, tabs.list, tabs.wrappers);
  tabs.start();
  fileKeys
    .get(accountId)
    .then((stored) => {
      key = stored ?? null;
      showKey();
    })
    .catch((error) => (keyAlert.textContent = describe(error)));
}
