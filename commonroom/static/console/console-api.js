// The console's calls to the room: the same operations as every client, with the console's cookie; the
// requests in flight; the login's end (a 401); and the status line and per-card errors every panel uses.
const { $, el } = window.CR;

export const PAGE = 200;

// -- the login (the cookie): a 401 from the room ends it; console.js says so and stops every loop -----------
export let signedOut = false;
let onEnded = () => {};
export function whenLoginEnds(handler) { onEnded = handler; }
function loginEnded() {
  if (signedOut) return;
  signedOut = true;
  onEnded();
}

// -- the API (the same operations as every client; cookie auth) ------------------
let inflight = 0;
function busy(delta) {
  inflight += delta;
  $("inflight").hidden = inflight === 0;
  $("inflight").textContent = `${inflight} request${inflight === 1 ? "" : "s"} in flight`;
}
export async function api(method, path, body, quiet) {
  if (!quiet) busy(1);
  try {
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    const resp = await fetch(path, init);
    const data = await resp.json().catch(() => null);
    if (resp.status === 401) loginEnded();
    if (!resp.ok) {
      const err = new Error((data && data.message) || `${resp.status} ${resp.statusText}`);
      err.status = resp.status; err.code = data && data.error;
      throw err;
    }
    return data;
  } finally { if (!quiet) busy(-1); }
}

// A failed action says so in its own card (kept across repaints until that action succeeds).
export const errors = new Map();
export function cardError(key) {
  const text = errors.get(key);
  return text ? el("p", { class: "card-error", role: "alert", "data-error": key, text }) : null;
}
export function actionFailed(key, verb, e) { errors.set(key, `${verb} failed: ${e.message}${e.code ? ` (${e.code})` : ""}`); }
export function flash(text, bad) { $("refresh-state").textContent = text; $("refresh-state").className = bad ? "bad" : "good"; }
