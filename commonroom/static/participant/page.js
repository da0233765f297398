// The commonroom participant page: plain JavaScript modules, no build, no library (the console's kit of helpers aside).
// It calls the room's HTTP API with the session's bearer in an Authorization header, like any client.
// Everything from the room is set with textContent, except the document's rendered HTML, which the room
// makes with markdown-it-py (raw HTML off) and which is rebuilt here from an allow-list of elements.
// This module: joining with an invitation, entering the room, leaving it, and the page's controls. The parts:
// page-api.js (the session and its calls), page-document.js (the document), page-proposals.js, page-versions.js,
// page-handoffs.js, page-boards.js, and page-live.js (the room's events as they happen).
import { api, can, failure, KEY, notice, say, session, whenSessionEnds } from "./page-api.js";
import { followHash, goTo, loadDocument, setView } from "./page-document.js";
import { openEditor, previewDiff, sendProposal } from "./page-proposals.js";
import { loadVersions, showDiff } from "./page-versions.js";
import { createHandoff } from "./page-handoffs.js";
import { cancelReply, openBoard, post, showOwnBoard } from "./page-boards.js";
import { followLive, setLive, startLive, stopLive } from "./page-live.js";
const { $, el, tickTimes } = window.CR;

const JOIN_PREFIX = "commonroom://join/";
// -- joining ------------------------------------------------------------------------
function payloadOf(token) {
  try {
    const body = token.slice(JOIN_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/");
    const json = new TextDecoder().decode(Uint8Array.from(atob(body + "=".repeat((4 - body.length % 4) % 4)), (c) => c.charCodeAt(0)));
    return JSON.parse(json);
  } catch (e) { return null; }
}
const JOIN_ADVICE = {
  invitation_redeemed: "This invitation was already used (each works once). Ask whoever sent it for a new one.",
  invitation_expired: "This invitation has expired. Ask whoever sent it for a new one.",
  invitation_revoked: "This invitation was revoked. Ask whoever sent it for a new one.",
  unauthorized: "The room does not know this invitation: it may be for another room, or mistyped.",
};
async function join(token) {
  token = token.trim();
  const error = $("join-error");
  say(error, "");
  if (!token.startsWith(JOIN_PREFIX)) { say(error, `An invitation starts with ${JOIN_PREFIX}`, true); return; }
  const payload = payloadOf(token);
  const elsewhere = payload && payload.transport && payload.transport.port && Number(payload.transport.port) !== Number(location.port || 80)
    ? ` This invitation names the room at ${payload.transport.address}:${payload.transport.port}; if that is another room, open its address instead.` : "";
  try {
    const resp = await fetch("/workspace/join", { method: "POST", cache: "no-store",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ invitation: token, client: "commonroom page" }) });
    const data = await resp.json().catch(() => null);
    if (!resp.ok) {
      const code = data && data.error;
      say(error, `${JOIN_ADVICE[code] || ""} (${code || resp.status}: ${(data && data.message) || resp.statusText})${elsewhere}`.trim(), true);
      return;
    }
    session.bearer = data.token;
    sessionStorage.setItem(KEY, session.bearer);
    $("join-token").value = "";
    await enter();
  } catch (e) { say(error, `The room did not answer: ${e.message}`, true); }
}
// A 401 from any call or from the live stream: the session is gone, back to the join panel.
whenSessionEnds(sessionGone);
function sessionGone(err) {
  session.bearer = null; stopLive();
  sessionStorage.removeItem(KEY);
  $("room").hidden = true; $("join-panel").hidden = false; $("leave").hidden = true;
  setLive("not joined", "");
  notice(`Your session has ended (${err.code || "unauthorized"}: ${err.message}). Join again with a new invitation.`);
}
// -- entering the room ------------------------------------------------------------------
async function enter() {
  try {
    session.me = await api("GET", "/workspace/session");
  } catch (e) {
    if (e.status !== 401) { notice(`The room did not answer: ${failure(e)}`); $("join-panel").hidden = false; }
    return;
  }
  const me = session.me;
  session.caps = new Set(me.capabilities);
  notice("");
  $("join-panel").hidden = true; $("room").hidden = false; $("leave").hidden = false;
  $("who").textContent = `${me.participant.name} · ${me.capabilities.join(", ")}`;
  $("propose-open").hidden = !can("propose");
  $("handoff-form").hidden = !can("handoff");
  showOwnBoard(me);
  const room = await api("GET", "/workspace/room");
  $("room-name").textContent = room.file_name;
  document.title = `${room.file_name} · commonroom`;
  startLive(room.last_event_id);
  await loadDocument();
  followLive();
}
function leave() {
  stopLive();
  sessionStorage.removeItem(KEY); session.bearer = null;
  location.replace(location.pathname);
}

document.addEventListener("DOMContentLoaded", () => {
  const kinds = ["note", "question", "answer", "todo", "decision", "risk", "progress", "guidance", "proposal"];
  $("compose-kind").replaceChildren(...kinds.map((k) => el("option", { value: k, text: k })));
  $("join-form").addEventListener("submit", (ev) => { ev.preventDefault(); join($("join-token").value); });
  $("leave").addEventListener("click", leave);
  $("view-text").addEventListener("click", () => setView("text"));
  $("view-rendered").addEventListener("click", () => setView("rendered"));
  $("outline").addEventListener("change", () => { const a = $("outline").value; if (a) history.replaceState(null, "", `#${a}`); goTo(a); });
  $("propose-open").addEventListener("click", () => openEditor(-1));
  $("edit-region").addEventListener("change", () => openEditor($("edit-region").value === "" ? -1 : Number($("edit-region").value)));
  $("edit-diff").addEventListener("click", previewDiff);
  $("edit-form").addEventListener("submit", sendProposal);
  $("edit-cancel").addEventListener("click", () => { $("edit-panel").hidden = true; });
  $("versions-more").addEventListener("click", () => loadVersions(true).catch((e) => say($("versions-count"), failure(e), true)));
  $("diff-form").addEventListener("submit", (ev) => { ev.preventDefault(); showDiff(Number($("diff-from").value), Number($("diff-to").value)); });
  $("handoff-form").addEventListener("submit", createHandoff);
  $("board-pick").addEventListener("change", () => openBoard($("board-pick").value));
  $("board-open").addEventListener("submit", (ev) => { ev.preventDefault(); const sid = $("board-sid").value.trim(); if (sid) openBoard(sid); });
  $("composer").addEventListener("submit", post);
  $("compose-body").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) post(ev); });
  $("reply-cancel").addEventListener("click", cancelReply);
  window.addEventListener("hashchange", followHash);
  setInterval(tickTimes, 30000);
  // an invitation link: #join=<token body>. Taken out of the address bar before anything else happens.
  const hash = location.hash.slice(1);
  let invitation = null;
  if (hash.startsWith("join=")) invitation = JOIN_PREFIX + hash.slice(5);
  else if (decodeURIComponent(hash).startsWith(JOIN_PREFIX)) invitation = decodeURIComponent(hash);
  if (invitation) history.replaceState(null, "", location.pathname + location.search);
  if (invitation) join(invitation);
  else if (session.bearer) enter();
});
