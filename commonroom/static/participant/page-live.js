// The participant page live: the room's events through fetch() (EventSource cannot send Authorization),
// each event reloading what it changed; "away" while the room does not answer, and a catch-up when it is back.
// Without the observe capability the page asks the room every 5 s instead.
import { api, can, notice, session, sessionEnded } from "./page-api.js";
import { docState, followVersion, loadDocument, loadLeases } from "./page-document.js";
import { loadProposals } from "./page-proposals.js";
import { loadVersions } from "./page-versions.js";
import { loadHandoffs } from "./page-handoffs.js";
import { learn, loadBoard, shownBoard } from "./page-boards.js";
const { $, sleep } = window.CR;

let active = false, liveAbort = null, lastEventId = null, away = false;
// Live from the room's event `eventId` on (the document is read next, then followLive()); stopLive() ends it.
export function startLive(eventId) { lastEventId = eventId; active = true; }
export function stopLive() { active = false; if (liveAbort) liveAbort.abort(); }
export function followLive() {
  setLive(can("observe") ? "connecting…" : "checking every 5 s (no observe capability)", "");
  if (can("observe")) follow(); else pollWithoutObserve();
  refreshAll();
}
export function setLive(text, cls) { const n = $("live"); n.textContent = text; n.className = `live ${cls || ""}`; }
const reloaders = { doc: loadDocument, leases: loadLeases, proposals: loadProposals, handoffs: loadHandoffs, board: loadBoard, versions: () => loadVersions(false) };
const pending = new Set();
let pendingTimer = null;
function reload(...what) {
  for (const w of what) pending.add(w);
  if (pendingTimer) return;
  pendingTimer = setTimeout(() => {
    pendingTimer = null;
    const now = [...pending]; pending.clear();
    for (const w of now) reloaders[w]().catch((e) => { if (e.status !== 401) console.warn(w, e.message); });
  }, 50);
}
function onEvent(event) {
  const t = event.type, p = event.payload || {};
  if (event.actor && event.actor.session_id) learn(event.actor.session_id);
  if (t === "version.committed" || t.startsWith("document.")) // the text first: the rest does not compete with it
    (t === "version.committed" ? followVersion(p) : loadDocument()).catch(() => {}).finally(() => reload("versions", "proposals", "leases"));
  else if (t.startsWith("lease.")) reload("leases");
  else if (t.startsWith("proposal.")) reload("proposals");
  else if (t.startsWith("handoff.") || t.startsWith("task.")) reload("handoffs");
  else if (t.startsWith("board.")) { learn(p.board_session_id); if (p.board_session_id === shownBoard()) reload("board"); }
}
function refreshAll() { return Promise.allSettled(Object.values(reloaders).map((f) => f())); }
async function follow() {
  let backoff = 1000;
  while (active) {
    const controller = new AbortController();
    liveAbort = controller;
    let timer = null;
    const watchdog = () => { clearTimeout(timer); timer = setTimeout(() => controller.abort(), 40000); }; // heartbeats come every 15 s
    try {
      const headers = { Accept: "text/event-stream", Authorization: `Bearer ${session.bearer}` };
      if (lastEventId !== null) headers["Last-Event-ID"] = String(lastEventId);
      watchdog();
      const resp = await fetch("/workspace/observe", { headers, cache: "no-store", signal: controller.signal });
      if (resp.status === 401) { const data = await resp.json().catch(() => ({})); sessionEnded(Object.assign(new Error(data.message || "unauthorized"), { code: data.error })); return; }
      if (!resp.ok) throw new Error(`${resp.status}`);
      setLive("live", "good");
      if (away) { away = false; notice(`The room is back (${new Date().toLocaleTimeString()}).`); setTimeout(() => { if (!away) notice(""); }, 5000); refreshAll(); }
      backoff = 1000;
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        watchdog();
        buffer += value.replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          let type = "message", data = "", id = null;
          for (const line of frame.split("\n")) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":"), field = colon < 0 ? line : line.slice(0, colon), v = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "event") type = v; else if (field === "data") data += (data ? "\n" : "") + v; else if (field === "id") id = v;
          }
          if (id !== null && /^\d+$/.test(id)) lastEventId = Number(id);
          if (!data) continue;
          let parsed; try { parsed = JSON.parse(data); } catch (e) { continue; }
          if (type === "resync") { if (parsed.last_event_id !== undefined) lastEventId = parsed.last_event_id; refreshAll(); }
          else onEvent(parsed);
        }
      }
    } catch (e) {
      if (!active) return;
    } finally { clearTimeout(timer); }
    if (!active) return;
    away = true;
    setLive(`room away — retrying in ${Math.round(backoff / 1000)}s`, "bad");
    notice("The room is away (not answering). This page keeps trying and catches up when it is back.");
    await sleep(backoff);
    backoff = Math.min(backoff * 2, 15000);
  }
}
async function pollWithoutObserve() { // no observe capability: ask the room now and then
  let head = docState.version;
  while (active) {
    await sleep(5000);
    try {
      const room = await api("GET", "/workspace/room");
      if (away) { away = false; notice("The room is back."); }
      setLive("checking every 5 s (no observe capability)", "good");
      if (room.head_version !== head) { head = room.head_version; refreshAll(); }
    } catch (e) { if (e.status === 401) return; away = true; setLive("room away", "bad"); notice("The room is away (not answering). This page keeps trying."); }
  }
}

