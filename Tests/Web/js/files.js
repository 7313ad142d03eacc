// The Files screen's modules driven directly: key files, file keys, and sealed files written to a chosen file
// or sealed and opened again and again. (How these files are run: page.js.)

/** Each key file (name → PEM text) read as the Files screen reads it: a public key's or an identity's key ID
 *  as shown, or the refusal's kind; and RFC 7914 §12's third scrypt vector through the page's worker. */
async function readKeyFiles(files) {
  const { importIdentity } = await import("/js/file-keys.js");
  const { parsePublicKey, fingerprintText, keyIdOf } = await import("/js/pem.js");
  const { scrypt } = await import("/js/scrypt.js");
  const x = (b) => Array.from(b, (c) => c.toString(16).padStart(2, "0")).join("");
  const passphrase = async () => new TextEncoder().encode("hunter22");
  const out = {};
  for (const [name, text] of Object.entries(files)) {
    try {
      if (name.includes(".pub")) out[name] = fingerprintText(await keyIdOf(await parsePublicKey(text)));
      else out[name] = fingerprintText((await importIdentity(text, passphrase)).keyId);
    } catch (e) {
      out[name] = e.kind || "error " + e.message;
    }
  }
  // RFC 7914 §12, the third vector (N = 16384, r = 8, p = 16 is the fourth; too slow for a test).
  const e = new TextEncoder();
  out.rfc7914 = x(await scrypt(e.encode("pleaseletmein"), e.encode("SodiumChloride"), 16384, 8, 1, 64));
  return out;
}

/** Seals to and opens from files the user picked (FileSink), then a tampered file: { same, refusal, left }. */
async function sinkToChosenFile() {
  // A file the user picked, as the File System Access API gives it (here from the origin's private
  // file system, which has the same writable: written to a swap file, in place only on close()).
  const sealed = await import("/js/sealed-file.js");
  const { generateIdentity } = await import("/js/file-keys.js");
  const dir = await navigator.storage.getDirectory();
  const target = async (name) => {
    const handle = await dir.getFileHandle(name, { create: true });
    return { handle, writable: await handle.createWritable() };
  };
  const bytesOf = async (name) => new Uint8Array(await (await (await dir.getFileHandle(name)).getFile()).arrayBuffer());
  const me = await generateIdentity();
  const plain = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7919) & 0xff);
  let w = new sealed.FileSink(await target("out.cs"));
  await sealed.seal(new Blob([plain]), { recipients: [me.point], sink: w });
  await w.close();
  const sealedBytes = await bytesOf("out.cs");
  w = new sealed.FileSink(await target("out.txt"));
  await sealed.open(new Blob([sealedBytes]), { identity: me, sink: w });
  await w.close();
  const back = await bytesOf("out.txt");
  // Tampered in the last chunk, after three chunks were released and written out (flushed at once
  // here): abort() leaves nothing, not even the empty file the picker made.
  const bad = sealedBytes.slice();
  bad[bad.length - 20] ^= 1;
  w = new sealed.FileSink(await target("refused.txt"));
  const write = w.write.bind(w);
  w.write = async (b) => {
    await write(b);
    await w.flush();
  };
  let refusal = null;
  try {
    await sealed.open(new Blob([bad]), { identity: me, sink: w });
    await w.close();
  } catch (e) {
    refusal = e.kind;
    await w.abort();
  }
  const left = await dir.getFileHandle("refused.txt").then(
    () => true,
    () => false,
  );
  return { same: back.length === plain.length && back.every((b, i) => b === plain[i]), refusal, left };
}

/** Starts 10 seals and opens of 12 MiB, one after another, held by nothing but their reads; each outcome goes
 *  to `window.__runs` (true when the output is the input). Returns at once. */
async function sealAndOpenTenTimes() {
  const sealed = await import("/js/sealed-file.js");
  const { generateIdentity } = await import("/js/file-keys.js");
  const me = await generateIdentity();
  const plain = new Uint8Array(12 * 1024 * 1024);
  for (let i = 0; i < plain.length; i += 65536) crypto.getRandomValues(plain.subarray(i, i + 65536));
  const file = new Blob([plain]);
  window.__runs = [];
  (async () => {
    for (let r = 0; r < 10; r++) {
      const out = await sealed.seal(file, { recipients: [me.point] });
      const back = await (await sealed.open(out, { identity: me })).sink.blob().arrayBuffer();
      window.__runs.push(back.byteLength === plain.length && new Uint8Array(back).every((b, i) => b === plain[i]));
    }
  })().catch((e) => window.__runs.push(String(e)));
}

/** A file key for the signed-in account and one for the account "someone-else". */
async function saveFileKeysForTwoAccounts() {
  const { fileKeys, generateIdentity } = await import("/js/file-keys.js");
  const { session } = await import("/js/session.js");
  await fileKeys.save(session.account.id, await generateIdentity(), "generated");
  await fileKeys.save("someone-else", await generateIdentity(), "generated");
}

/** The key ID, as shown, of the signed-in account's file key. */
async function fileKeyFingerprint() {
  const { fileKeys } = await import("/js/file-keys.js");
  const { session } = await import("/js/session.js");
  const { fingerprintText } = await import("/js/pem.js");
  return fingerprintText((await fileKeys.get(session.account.id)).keyId);
}
