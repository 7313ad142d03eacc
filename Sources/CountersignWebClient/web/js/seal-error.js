// Why a sealed file or FileLock package was refused: `kind` is the error class of docs/SPEC.md §3 and
// §4.5 (the vectors' `expect:` words); the message says it in words, never with plaintext or keys.
export class SealError extends Error {
  constructor(kind, detail) {
    super(detail ? `${kind}: ${detail}` : kind);
    this.kind = kind;
  }
}

export const MESSAGES = {
  "unknown format": "this is neither a Countersign sealed file nor a FileLock package",
  "unknown version": "this file was sealed by a newer Countersign; upgrade to open it",
  tampered: "the file was altered or is corrupt: the payload failed authentication",
  truncated: "the file ends before its final chunk; get a complete copy",
};
