// The commonroom console: plain JavaScript modules, no build, no library.
// Everything from the room is rendered with textContent (never as HTML).
// This module: refreshing the panels (keeping the last good data), the room's events, the end of the login,
// and the page's controls. The parts: console-kit.js (the helpers, shared with the participant page),
// console-api.js, console-document.js, console-people.js and console-board.js.
import { api, flash, signedOut, whenLoginEnds } from "./console-api.js";
import { loadProposals, loadRoom, page, viewAs } from "./console-document.js";
import { loadHandoffs, loadLeases, loadPeople } from "./console-people.js";
import { board, complete, endComplete, endReply, loadSummaries, pickerKeys, post, renderBoard, renderPicker, restartBoard } from "./console-board.js";
const { $, tickTimes } = window.CR;

// -- refresh, keeping the last good data --------------------------------------------
const loaders = { room: loadRoom, proposals: loadProposals, people: loadPeople, leases: loadLeases, handoffs: loadHandoffs };
const failed = (name) => (e) => { document.body.dataset[`stale${name}`] = e.message; throw e; };
async function refreshAll(manual) {
  if (manual) { $("refresh-state").textContent = "refreshing…"; $("refresh").disabled = true; }
  const results = await Promise.allSettled(Object.entries(loaders).map(([n, f]) => f().catch(failed(n))));
  if (board.sid && manual) { if (board.healthy) board.refresh().catch(() => {}); else restartBoard(); loadSummaries(board.sid); }
  const bad = results.filter((r) => r.status === "rejected");
  if (manual) {
    $("refresh").disabled = false;
    $("refresh-state").textContent = bad.length ? `refresh failed: ${bad[0].reason.message} (showing the last good data)`
      : `refreshed ${new Date().toLocaleTimeString()}`;
    $("refresh-state").className = bad.length ? "bad" : "good";
  }
  return bad.length === 0;
}
const pending = new Map();
function schedule(name) {
  if (pending.has(name)) return;
  pending.set(name, setTimeout(() => { pending.delete(name); loaders[name]().catch(() => {}); }, 120));
}

// -- the room's events (EventSource with the cookie), reconnecting with a bounded backoff ---------
const ROUTES = [["version.", ["room", "proposals"]], ["document.", ["room"]], ["proposal.", ["proposals", "room"]],
  ["lease.", ["leases", "proposals"]], ["handoff.", ["handoffs"]], ["participant.", ["people"]], ["session.", ["people"]],
  ["invitation.", []], ["board.", ["people"]]];
const TYPES = ["invitation.created", "invitation.revoked", "participant.joined", "session.opened", "session.revoked",
  "version.committed", "document.external_edit", "document.external_edit_rejected", "lease.acquired", "lease.renewed",
  "lease.released", "lease.expired", "proposal.created", "proposal.approved", "proposal.rejected", "proposal.withdrawn",
  "handoff.created", "handoff.accepted", "handoff.input_requested", "handoff.input_received", "handoff.completed",
  "handoff.approved", "handoff.rejected", "handoff.cancelled", "board.message_posted", "board.message_resolved"];
let source = null, liveBackoff = 1000, everOpen = false;
function live(state, text) { $("live").className = `pill ${state}`; $("live").textContent = text; }
function connect() {
  source = new EventSource("/workspace/observe");
  source.addEventListener("open", () => {
    live("good", "live"); liveBackoff = 1000;
    if (everOpen) refreshAll(false); // events may have been missed while away
    everOpen = true;
  });
  const onEvent = (ev) => {
    for (const [prefix, names] of ROUTES) if (ev.type.startsWith(prefix)) names.forEach(schedule);
    $("live").title = `last event ${ev.lastEventId} at ${new Date().toLocaleTimeString()}`;
  };
  TYPES.forEach((t) => source.addEventListener(t, onEvent));
  source.addEventListener("resync", () => { source.close(); refreshAll(false); reconnect(0); });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) reconnect(liveBackoff);
    else live("warn", "reconnecting…");
  });
}
function reconnect(delay) {
  if (source) source.close();
  if (signedOut) return;
  // the stream cannot say why it failed: ask the room once, so an ended login stops the retries
  api("GET", "/workspace/room", undefined, true).catch(() => {});
  live("bad", `disconnected: retrying in ${Math.round(delay / 1000)}s`);
  liveBackoff = Math.min(liveBackoff * 2, 30000);
  setTimeout(() => { if (!signedOut) connect(); }, delay);
}

// -- the login ended (the cookie is gone or expired): say so and how to get a new one; stop every loop --------
whenLoginEnds(() => {
  if (source) source.close();
  board.gen += 1; // ends the board's long-poll loop
  live("bad", "signed out");
  const file = $("login-ended").dataset.file;
  $("login-command").textContent = `ce console ${file}`;
  $("login-ended").hidden = false;
  $("refresh").disabled = true;
});

document.addEventListener("DOMContentLoaded", () => {
  $("refresh").addEventListener("click", () => refreshAll(true));
  $("session-search").addEventListener("input", renderPicker);
  $("session-list").addEventListener("keydown", pickerKeys);
  $("composer").addEventListener("submit", post);
  $("reply-cancel").addEventListener("click", endReply);
  $("complete-form").addEventListener("submit", complete);
  $("complete-cancel").addEventListener("click", endComplete);
  $("versions-older").addEventListener("click", () => page(1));
  $("versions-newer").addEventListener("click", () => page(-1));
  $("version-as-diff").addEventListener("click", () => viewAs("diff"));
  $("version-as-text").addEventListener("click", () => viewAs("text"));
  $("compose-body").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) post(ev); });
  renderBoard();
  refreshAll(false).then((ok) => { if (!ok) flash("some panels failed to load: press Refresh", true); });
  connect();
  setInterval(tickTimes, 15000);
});
