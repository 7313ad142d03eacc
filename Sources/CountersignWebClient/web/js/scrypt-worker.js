// One scrypt derivation off the page's thread (scrypt.js makes one worker per call and ends it): seconds
// of ROMix here leave the page free to paint and answer.
import { scryptHere } from "./scrypt-core.js";

self.onmessage = async ({ data: { password, salt, n, r, p, length } }) => {
  try {
    const key = await scryptHere(password, salt, n, r, p, length);
    self.postMessage({ key }, [key.buffer]);
  } catch (error) {
    // Only the message crosses: an Error object would arrive without its text in some browsers.
    self.postMessage({ error: String(error?.message ?? error) });
  }
};
