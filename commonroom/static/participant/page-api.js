// The participant page's session and its calls to the room: the bearer (kept in the tab's sessionStorage),
// who the session is and what it may do, api() with the bearer in an Authorization header like any client,
// and the page's small helpers (status lines, the notice, lines of a text, lists rebuilt from the room).
const { $ } = window.CR;
export const KEY = "commonroom-session";

// -- the session and the API -----------------------------------------------------------
// bearer: the session's token (null when not joined); me: GET /workspace/session's answer; caps: its capabilities.
export const session = { bearer: sessionStorage.getItem(KEY), me: null, caps: new Set() };
export const can = (cap) => session.caps.has(cap);
let onEnded = () => {};
// What the page does when the room answers 401 (the session is gone: revoked, expired): set once by page.js.
export function whenSessionEnds(handler) { onEnded = handler; }
export function sessionEnded(err) { onEnded(err); }
class ApiError extends Error {}
export async function api(method, path, body) {
  const init = { method, cache: "no-store", headers: { Accept: "application/json", Authorization: `Bearer ${session.bearer}` } };
  if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
  const resp = await fetch(path, init);
  const data = await resp.json().catch(() => null);
  if (!resp.ok) {
    const err = new ApiError((data && data.message) || `${resp.status} ${resp.statusText}`);
    err.status = resp.status; err.code = data && data.error; err.data = data || {};
    if (resp.status === 401) sessionEnded(err);
    throw err;
  }
  return data;
}
export const failure = (e) => e.code ? `${e.code}: ${e.message}` : String(e.message || e);

// -- the page's small helpers -------------------------------------------------------------
export function say(node, text, bad) { node.textContent = text || ""; node.classList.toggle("error", !!bad); }
export function notice(text) { const n = $("notice"); n.textContent = text || ""; n.hidden = !text; }
export function splitLines(text) { // as an editor counts them: the final newline ends the last line
  if (text === "") return [];
  const lines = text.split(/\r\n|\n|\r/);
  if (/(\r\n|\n|\r)$/.test(text)) lines.pop();
  return lines;
}
// A list rebuilt from the room keeps what the person was typing in it (by field id) and the focus.
export function rebuild(list, items) {
  const typed = new Map([...list.querySelectorAll("input[id], textarea[id]")].map((f) => [f.id, f.value]));
  const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.id : null;
  list.replaceChildren(...items);
  for (const [id, value] of typed) { const f = document.getElementById(id); if (f && list.contains(f) && value) f.value = value; }
  if (focused) document.getElementById(focused)?.focus();
}
