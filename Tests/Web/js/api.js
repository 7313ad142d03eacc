// The page's API client, called as the screens call it. (How these files are run: page.js.)

/** The code of the problem the server answers to a token that names no session. */
async function callWithAForeignToken() {
  const { call } = await import("/js/api.js");
  try {
    await call("GET", "/v1/me", { token: "cs_not-a-session" });
  } catch (e) {
    return e.code;
  }
}
