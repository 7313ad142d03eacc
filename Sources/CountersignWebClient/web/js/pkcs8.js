// Private key files (docs/SPEC.md §2.2): PKCS#8, encrypted PKCS#8 (PBES2 with scrypt or PBKDF2, AES-CBC),
// and OpenSSL's SEC 1 "EC PRIVATE KEY" → a PrivateKeyInfo DER of a P-256 key, checked.
import { concat } from "./bytes.js";
import { DERError, keyName, OID, Reader, TAG } from "./der.js";
import { KeyError, parsePEM } from "./pem.js";
import { scrypt } from "./scrypt.js";

// Bounds on what a hostile key file may make the page compute (the CLI's).
const MAX_SCRYPT_N = 1 << 20;
const MAX_SCRYPT_MEMORY = 256 << 20;
const MAX_PBKDF2_ITERATIONS = 10_000_000;

const unsupported = (what) => new KeyError(
  "unsupported key encryption",
  `${what}; re-encrypt it with \`openssl pkcs8 -topk8 -scrypt\``,
);

/** EncryptedPrivateKeyInfo → the PrivateKeyInfo DER inside, or "wrong passphrase". */
export async function decryptPKCS8(der, passphrase) {
  let derive, iv, ct, keyLength;
  try {
    const outer = new Reader(der);
    const epki = outer.enter(TAG.sequence);
    outer.end();
    const alg = epki.enter(TAG.sequence);
    if (alg.oid() !== OID.pbes2)
      throw unsupported("not PBES2 (legacy PKCS#5 v1 or PKCS#12 schemes such as 3DES are refused)");
    const params = alg.enter(TAG.sequence);
    alg.end();
    const kdf = params.enter(TAG.sequence);
    const scheme = params.enter(TAG.sequence);
    params.end();
    const cipher = scheme.oid();
    if (cipher === OID.aes256CBC) keyLength = 32;
    else if (cipher === OID.aes128CBC) keyLength = 16;
    else throw unsupported("a cipher other than AES-128-CBC or AES-256-CBC");
    iv = scheme.read(TAG.octetString);
    scheme.end();
    if (iv.length !== 16) throw new KeyError("malformed key", "the AES-CBC IV is not 16 bytes");
    ct = epki.read(TAG.octetString);
    epki.end();
    const kdfOID = kdf.oid();
    const kp = kdf.enter(TAG.sequence);
    kdf.end();
    const salt = kp.read(TAG.octetString);
    if (kdfOID === OID.scrypt) {
      const [n, r, p] = [kp.int(), kp.int(), kp.int()];
      if (!kp.atEnd && kp.int() !== keyLength)
        throw new KeyError("malformed key", "the scrypt key length does not match the cipher");
      kp.end();
      const powerOfTwo = n > 1 && (n & (n - 1)) === 0;
      const inRange = n <= MAX_SCRYPT_N && r >= 1 && r <= 32 && p >= 1 && p <= 16 && 128 * r * n <= MAX_SCRYPT_MEMORY;
      if (!(powerOfTwo && inRange)) {
        throw unsupported(`scrypt parameters N=${n} r=${r} p=${p} are out of the accepted range`);
      }
      derive = () => scrypt(passphrase, salt, n, r, p, keyLength);
    } else if (kdfOID === OID.pbkdf2) {
      const iterations = kp.int();
      if (kp.peekTag === TAG.integer && kp.int() !== keyLength)
        throw new KeyError("malformed key", "the PBKDF2 key length does not match the cipher");
      let hash = "SHA-1";
      if (!kp.atEnd) {
        const prf = kp.enter(TAG.sequence);
        hash = {
          [OID.hmacWithSHA1]: "SHA-1",
          [OID.hmacWithSHA256]: "SHA-256",
          [OID.hmacWithSHA512]: "SHA-512",
        }[prf.oid()];
        if (!hash) throw unsupported("PBKDF2 with an unsupported PRF");
        if (!prf.atEnd) prf.null();
        prf.end();
      }
      kp.end();
      if (iterations < 1 || iterations > MAX_PBKDF2_ITERATIONS)
        throw unsupported(`PBKDF2 iteration count ${iterations} is out of range`);
      derive = async () => {
        const k = await crypto.subtle.importKey("raw", passphrase, "PBKDF2", false, ["deriveBits"]);
        return new Uint8Array(
          await crypto.subtle.deriveBits({ name: "PBKDF2", hash, salt, iterations }, k, keyLength * 8),
        );
      };
    } else {
      throw unsupported("a key derivation other than scrypt or PBKDF2");
    }
  } catch (e) {
    if (e instanceof DERError) throw new KeyError("malformed key file", `EncryptedPrivateKeyInfo: ${e.message}`);
    throw e;
  }
  if (ct.length === 0 || ct.length % 16 !== 0)
    throw new KeyError("malformed key", "the encrypted key length is not a multiple of 16");
  const key = await crypto.subtle.importKey("raw", await derive(), "AES-CBC", false, ["decrypt"]);
  try {
    return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-CBC", iv }, key, ct));
  } catch {
    // CBC has no integrity: a wrong passphrase shows up as bad padding.
    throw new KeyError("wrong passphrase", "the passphrase does not open this key file (or the file is corrupt)");
  }
}

const wrongType = (alg, curve) => new KeyError(
  "wrong key type",
  `this is ${keyName(alg, curve)}, but a P-256 key is needed; make one with \`countersign keygen\``,
);

/** ECPrivateKey (RFC 5915): SEQUENCE { INTEGER 1, OCTET STRING (32 bytes on P-256), [0] curve OPTIONAL,
 *  [1] public key OPTIONAL }, read to its end; DER errors are prefixed with its name. */
function checkECPrivateKey(der) {
  try {
    const outer = new Reader(der);
    const key = outer.enter(TAG.sequence);
    outer.end();
    if (key.int() !== 1) throw new DERError("version is not 1");
    if (key.read(TAG.octetString).length !== 32) throw new DERError("the private key is not 32 bytes");
    const params = key.optional(0xa0);
    if (params) {
      const p = new Reader(params);
      const curve = p.oid();
      p.end();
      if (curve !== OID.prime256v1) throw wrongType(OID.ecPublicKey, curve);
    }
    const publicKey = key.optional(0xa1);
    if (publicKey) {
      const p = new Reader(publicKey);
      p.read(TAG.bitString);
      p.end();
    }
    key.end();
  } catch (e) {
    if (e instanceof DERError) throw new DERError(`ECPrivateKey: ${e.message}`);
    throw e;
  }
}

/** Checks that a PrivateKeyInfo holds a P-256 key, read to its end; names the key type otherwise. */
function checkPKCS8(der) {
  try {
    const outer = new Reader(der);
    const info = outer.enter(TAG.sequence);
    outer.end();
    const version = info.int();
    if (version !== 0 && version !== 1) throw new DERError(`version ${version} is neither 0 nor 1`);
    const alg = info.enter(TAG.sequence);
    const algOID = alg.oid();
    const curve = alg.peekTag === TAG.oid ? alg.oid() : null;
    // The type first: another key's parameters (RSA's NULL) are not trailing bytes but a wrong key.
    if (algOID !== OID.ecPublicKey || curve !== OID.prime256v1) throw wrongType(algOID, curve);
    alg.end();
    checkECPrivateKey(info.read(TAG.octetString));
    info.optional(0xa0); // attributes
    if (version === 1) info.optional(0x81); // publicKey, RFC 5958
    info.end();
  } catch (e) {
    if (e instanceof DERError) throw new KeyError("malformed key", `PrivateKeyInfo: ${e.message}`);
    throw e;
  }
  return der;
}

// SEQUENCE { INTEGER 0, SEQUENCE { id-ecPublicKey, prime256v1 }, OCTET STRING { ECPrivateKey } }
function sec1ToPKCS8(sec1) {
  const len = (n) => (n < 128 ? [n] : n < 256 ? [0x81, n] : [0x82, n >> 8, n & 0xff]);
  const tlv = (tag, body) => concat(Uint8Array.of(tag, ...len(body.length)), body);
  const alg = Uint8Array.from("301306072a8648ce3d020106082a8648ce3d030107".match(/../g), (h) => parseInt(h, 16));
  return tlv(TAG.sequence, concat(Uint8Array.of(2, 1, 0), alg, tlv(TAG.octetString, sec1)));
}

export const isEncrypted = (text) => {
  try {
    return parsePEM(text).label === "ENCRYPTED PRIVATE KEY";
  } catch {
    return false;
  }
};

/** A private key file's text → PrivateKeyInfo DER. `passphrase()` is asked only for an encrypted file. */
export async function readPrivateKeyFile(text, passphrase) {
  const { label, der } = parsePEM(text);
  switch (label) {
    case "PRIVATE KEY":
      return checkPKCS8(der);
    case "ENCRYPTED PRIVATE KEY": {
      const plain = await decryptPKCS8(der, await passphrase());
      try {
        return checkPKCS8(plain);
      } catch (e) {
        // CBC padding can pass by chance with a wrong passphrase; the DER then is garbage.
        if (e.kind === "malformed key")
          throw new KeyError("wrong passphrase", "the passphrase does not open this key file (or the file is corrupt)");
        throw e;
      }
    }
    case "EC PRIVATE KEY":
      try {
        checkECPrivateKey(der);
      } catch (e) {
        if (e instanceof DERError) throw new KeyError("malformed key", e.message);
        throw e;
      }
      return sec1ToPKCS8(der);
    case "RSA PRIVATE KEY":
      throw new KeyError("wrong key type", "this is an RSA key, but a P-256 key is needed");
    case "PUBLIC KEY":
      throw new KeyError(
        "public key where a private key is needed",
        "this is a public key; choose the private key file `countersign keygen -o` wrote",
      );
    default:
      throw new KeyError("malformed PEM", `unexpected PEM label "${label}"; expected PRIVATE KEY`);
  }
}
