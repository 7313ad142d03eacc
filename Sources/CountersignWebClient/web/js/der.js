// Just enough DER (X.690) to read key files: SubjectPublicKeyInfo, PrivateKeyInfo and PKCS#8
// EncryptedPrivateKeyInfo (docs/SPEC.md §2.2–2.3). Strict DER, never BER: definite lengths in their
// shortest form, INTEGERs in their shortest form, empty NULLs, no trailing bytes where a structure must
// end. One key file has one encoding, so a file that parses is the file that was written.
import { hex } from "./bytes.js";

export const TAG = { integer: 0x02, bitString: 0x03, octetString: 0x04, null: 0x05, oid: 0x06, sequence: 0x30 };

export const OID = {
  ecPublicKey: "2a8648ce3d0201",
  prime256v1: "2a8648ce3d030107",
  secp384r1: "2b81040022",
  secp521r1: "2b81040023",
  secp256k1: "2b8104000a",
  rsaEncryption: "2a864886f70d010101",
  ed25519: "2b6570",
  x25519: "2b656e",
  pbes2: "2a864886f70d01050d",
  pbkdf2: "2a864886f70d01050c",
  scrypt: "2b06010401da47040b",
  hmacWithSHA1: "2a864886f70d0207",
  hmacWithSHA256: "2a864886f70d0209",
  hmacWithSHA512: "2a864886f70d020b",
  aes128CBC: "608648016503040102",
  aes256CBC: "60864801650304012a",
};

export class DERError extends Error {}

export class Reader {
  constructor(bytes) {
    this.bytes = bytes;
    this.at = 0;
  }
  get atEnd() {
    return this.at === this.bytes.length;
  }
  get peekTag() {
    return this.bytes[this.at];
  }
  /** The contents of the next element, which must have `tag`. */
  read(tag) {
    const b = this.bytes;
    if (this.at + 2 > b.length) throw new DERError("ends early");
    if (b[this.at] !== tag)
      throw new DERError(`expected tag 0x${tag.toString(16)}, found 0x${b[this.at].toString(16)}`);
    let length = b[this.at + 1];
    let at = this.at + 2;
    if (length & 0x80) {
      const n = length & 0x7f;
      if (n === 0) throw new DERError("indefinite length (BER, not DER)");
      if (n > 4) throw new DERError("a length of more than 4 bytes");
      if (at + n > b.length) throw new DERError("ends early");
      length = 0;
      for (let i = 0; i < n; i++) length = length * 256 + b[at + i];
      if (length < 0x80 || b[at] === 0) throw new DERError("length not in its shortest form");
      at += n;
    }
    if (at + length > b.length) throw new DERError("ends early");
    this.at = at + length;
    return b.subarray(at, at + length);
  }
  enter(tag) {
    return new Reader(this.read(tag));
  }
  /** The contents of the next element if it has `tag` (an OPTIONAL field), else null. */
  optional(tag) {
    return !this.atEnd && this.peekTag === tag ? this.read(tag) : null;
  }
  oid() {
    return hex(this.read(TAG.oid));
  }
  /** A small non-negative INTEGER (parameters, versions). */
  int() {
    const v = this.read(TAG.integer);
    if (v.length === 0) throw new DERError("an empty INTEGER");
    // X.690 §8.3.2: the first nine bits are never all 0 or all 1 (a sign byte that changes nothing).
    if (v.length > 1 && ((v[0] === 0 && !(v[1] & 0x80)) || (v[0] === 0xff && v[1] & 0x80)))
      throw new DERError("INTEGER not in its shortest form");
    if (v.length > 6 || v[0] & 0x80) throw new DERError("an integer out of range");
    return v.reduce((n, b) => n * 256 + b, 0);
  }
  null() {
    if (this.read(TAG.null).length !== 0) throw new DERError("NULL with contents");
  }
  end() {
    if (!this.atEnd) throw new DERError("trailing bytes");
  }
}

/** What a key algorithm and curve are, in words (for "wrong key type" errors). */
export function keyName(alg, curve) {
  switch (alg) {
    case OID.rsaEncryption: return "an RSA key";
    case OID.ed25519: return "an Ed25519 key";
    case OID.x25519: return "an X25519 key";
    case OID.ecPublicKey:
      return {
        [OID.prime256v1]: "a P-256 key",
        [OID.secp384r1]: "a P-384 key",
        [OID.secp521r1]: "a P-521 key",
        [OID.secp256k1]: "a secp256k1 key",
      }[curve] ?? "an EC key on an unsupported curve";
    default: return "a key of an unknown algorithm";
  }
}
