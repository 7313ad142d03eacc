// The server layer: the proof-of-work captcha (docs/openapi.yaml, /v1/captcha); ../captcha.js solves it.
import { call } from "../api.js";

export const ENDPOINTS = [
  {
    operationId: "getCaptcha",
    method: "GET",
    path: "/v1/captcha",
    answer: "Challenge",
    reads: ["algorithm", "challenge", "maxnumber", "salt", "signature"],
  },
];

/**
 * A fresh ALTCHA challenge.
 * @returns {Promise<object>} Challenge `{algorithm: "SHA-256", challenge, maxnumber, salt, signature}`
 */
export async function getCaptcha() {
  return (await call("GET", "/v1/captcha")).body;
}
