// Solves the server's captcha in Web Workers (one per core, each trying every k-th number), reporting
// progress, and returns the request's `captcha` field: base64 of the solution's JSON.
import { ApiError } from "./api.js";
import { getCaptcha } from "./server/captcha.js";
import { workerURL } from "./trusted.js";

export async function solveCaptcha(onProgress = () => {}) {
  const c = await getCaptcha();
  // Bounded work whatever the answer says: the protocol's algorithm, at most ten million tries.
  if (c?.algorithm !== "SHA-256" || !Number.isSafeInteger(c.maxnumber) || c.maxnumber < 0 || c.maxnumber > 10_000_000) {
    throw new Error("The server's captcha is not one this page can solve.");
  }
  const count = Math.max(1, Math.min(navigator.hardwareConcurrency || 2, 8));
  const workers = [];
  try {
    const number = await new Promise((resolve, reject) => {
      const tried = new Array(count).fill(0);
      let finished = 0;
      for (let i = 0; i < count; i++) {
        const worker = new Worker(workerURL("/js/captcha-worker.js"), { type: "module", name: "captcha" });
        workers.push(worker);
        worker.onerror = () => reject(new Error("The proof of work could not run in this browser."));
        worker.onmessage = ({ data }) => {
          tried[i] = data.tried;
          // Expected work is half the range; show progress against it, capped below 100 until found.
          const done = tried.reduce((a, b) => a + b, 0);
          onProgress(Math.min(99, Math.floor((done / (c.maxnumber / 2 + 1)) * 100)));
          if (data.found !== undefined && data.found !== null) resolve(data.found);
          else if (data.found === null && ++finished === count)
            reject(new Error("The captcha has no solution; try again."));
        };
        worker.postMessage({ salt: c.salt, challenge: c.challenge, start: i, stride: count, max: c.maxnumber });
      }
    });
    onProgress(100);
    const solution = {
      algorithm: c.algorithm,
      challenge: c.challenge,
      number: number,
      salt: c.salt,
      signature: c.signature,
    };
    return btoa(JSON.stringify(solution));
  } finally {
    for (const worker of workers) worker.terminate();
  }
}

/** Sends `request(captcha)`; when the server answers captcha-required, solves one (progress through
 *  `say`) and sends it again. */
export async function withCaptcha(request, say = () => {}) {
  try {
    return await request(undefined);
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== "captcha-required") throw error;
  }
  say("Solving the proof of work… 0%");
  const captcha = await solveCaptcha((percent) => say(`Solving the proof of work… ${percent}%`));
  say("Proof of work done.");
  return request(captcha);
}
