// The console's board of the chosen session: the session picker, the board kept live (baseline, retained
// snapshot, long-poll deltas merged by message id), its two summaries, and the operator's steps on it: reply,
// answer, complete a todo, and post (Human Join).
import { api, PAGE, signedOut } from "./console-api.js";
import { sessions } from "./console-people.js";
const { $, enc, el, plural, shortId, sleep, relative, when } = window.CR;

// -- the board: baseline, retained snapshot, long-poll deltas merged by message id ---------------
export const board = { sid: null, gen: 0, healthy: false, messages: new Map(), refresh: async () => {} };
function boardState(cls, text) { $("board-state").className = `pill ${cls}`; $("board-state").textContent = text; }
async function snapshot(sid) {
  const all = new Map(); let cursor = null, pages = 0;
  do {
    const page = await api("GET", `/workspace/boards/${enc(sid)}/messages?limit=${PAGE}${cursor ? "&cursor=" + enc(cursor) : ""}`);
    page.messages.forEach((m) => all.set(m.message_id, m));
    cursor = page.next_cursor; pages += 1;
  } while (cursor && pages < 20);
  return { all, truncated: Boolean(cursor) };
}
function merge(messages) { for (const m of messages) board.messages.set(m.message_id, m); renderBoard(); if (messages.length) summarySoon(); }
async function boardLoop(gen, sid) {
  let backoff = 1000;
  while (gen === board.gen) {
    try {
      boardState("warn", "loading…");
      let token = (await api("GET", `/workspace/boards/${enc(sid)}/observe`)).observation_token; // baseline first
      const snap = await snapshot(sid);
      if (gen !== board.gen) return;
      board.messages = snap.all; board.truncated = snap.truncated; renderBoard();
      board.healthy = true; backoff = 1000; boardState("good", "live");
      let more = false;
      while (gen === board.gen) {
        const obs = await api("GET", `/workspace/boards/${enc(sid)}/observe?after_observation_token=${enc(token)}&wait_seconds=${more ? 0 : 25}&limit=100`, undefined, true);
        if (gen !== board.gen) return;
        if (obs.history_lost) { boardState("warn", "history lost: reloading"); break; }
        merge(obs.messages); token = obs.observation_token; more = obs.has_more;
        $("board-state").title = `last check ${new Date().toLocaleTimeString()} (${obs.wait_outcome || "changes"})`;
      }
    } catch (e) {
      if (gen !== board.gen || signedOut) return;
      board.healthy = false;
      boardState("bad", `reconnecting in ${Math.round(backoff / 1000)}s: ${e.message}`);
      await sleep(backoff); backoff = Math.min(backoff * 2, 30000);
    }
  }
}
// A new loop (reload, new baseline); the last good messages stay until the reload replaces them.
export function restartBoard() {
  board.gen += 1; board.healthy = false;
  if (board.sid) boardLoop(board.gen, board.sid);
}
board.refresh = async () => { const snap = await snapshot(board.sid); merge([...snap.all.values()]); };
export function choose(sid) {
  if (sid !== board.sid) { endReply(); endComplete(); }
  board.sid = sid; board.messages = new Map(); board.truncated = false; renderBoard(); loadSummaries(sid);
  $("compose-send").disabled = !sid; restartBoard();
  if (!$("session-list").querySelector(`[data-sid="${CSS.escape(sid)}"]`)) $("session-search").value = "";
  renderPicker();
  $("board-sid").textContent = sid;
}
export function renderBoard() {
  const items = [...board.messages.values()].sort((x, y) => (x.created_at < y.created_at ? -1 : x.created_at > y.created_at ? 1 : 0));
  const byId = new Map(items.map((m) => [m.message_id, m]));
  $("board").replaceChildren(...(items.length ? items.map((m) => el("li", { class: `msg kind-${m.kind} prio-${m.priority}`, "data-id": m.message_id },
    el("div", { class: "msg-head" }, el("span", { class: `badge ${m.kind}`, text: m.kind }), " ",
      el("span", { class: "who", text: m.author ? m.author.name : "?" }), " ", when(m.created_at),
      m.priority !== "normal" ? el("span", { class: `badge prio ${m.priority}`, text: m.priority }) : null,
      m.requires_ack || m.first_acked_at ? el("span", { class: `badge ack${m.first_acked_at ? " acked" : ""}`,
        title: m.first_acked_at ? `first ACK ${m.first_acked_at}` : "the session has not ACKed it yet",
        text: m.first_acked_at ? `ACKed ${relative(m.first_acked_at)}` : "ACK pending" }) : null,
      el("span", { class: `badge ${m.status}`, text: m.status }),
      m.reply_to ? el("span", { class: "muted", text: ` ↳ reply to ${byId.has(m.reply_to) ? byId.get(m.reply_to).kind : ""} ${m.reply_to}` }) : null,
      m.tags && m.tags.length ? el("span", { class: "muted", text: " #" + m.tags.join(" #") }) : null),
    el("p", { class: "body", text: m.body }), messageActions(m))) : [el("li", { class: "empty", text: board.sid ? "no retained messages" : "choose a session to see its board" })]));
  const n = items.length;
  $("board").dataset.count = String(n);
  $("board-count").textContent = board.sid ? `${n}${board.truncated ? "+ (truncated)" : ""} retained message${n === 1 ? "" : "s"}` : "";
}
// The picker: one entry per live session (its whole text wraps, never cut), the chosen one marked.
export function renderPicker() {
  const q = $("session-search").value.trim().toLowerCase();
  const hits = sessions.filter((s) => !q || [s.session.id, s.session.participant.name, s.session.client || ""].join(" ").toLowerCase().includes(q));
  $("session-list").replaceChildren(...hits.map((s) => el("button", { type: "button", role: "option",
    class: "session-entry", "data-sid": s.session.id, title: s.session.id, "aria-selected": s.session.id === board.sid ? "true" : "false",
    onclick: () => choose(s.session.id) }, el("span", { class: "who", text: s.session.participant.name }), " ",
    el("span", { class: "mono", text: shortId(s.session.id) }), " ",
    el("span", { class: "muted", text: `${s.open_messages} open${s.last_activity_at ? " · " + relative(s.last_activity_at) : ""}` }))));
  $("picker-count").textContent = `${hits.length} of ${sessions.length} sessions`;
}
// Arrow keys move between the entries; Enter or Space chooses (a button's own behaviour).
export function pickerKeys(ev) {
  if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
  const entries = [...$("session-list").querySelectorAll(".session-entry")];
  const at = entries.indexOf(document.activeElement);
  const next = entries[Math.max(0, Math.min(entries.length - 1, at + (ev.key === "ArrowDown" ? 1 : -1)))];
  if (next) { next.focus(); ev.preventDefault(); }
}

// -- the two summaries of the chosen session (session_discussion_summary, session_handoff_summary) ---------
// Stored facts only, as the room answers them: counts, the lists' "N more not shown", history lost.
let summaryTimer = null, summaryGen = 0;
function summarySoon() { clearTimeout(summaryTimer); summaryTimer = setTimeout(() => loadSummaries(board.sid), 300); }
const leftOff = (list) => (list.truncated ? ` (${list.total - list.items.length} more not shown)` : "");
const cutText = (text, cut) => (cut ? `${text}…` : text);
function flags(s) {
  return [s.history_lost ? el("span", { class: "badge prio high", text: "history lost", title: "retention dropped older messages: counts cover what is retained" }) : null,
    s.truncated ? el("span", { class: "badge", text: "truncated" }) : null];
}
function renderDiscussion(s) {
  const kinds = Object.entries(s.by_kind).filter(([, n]) => n).map(([k, n]) => `${k} ${n}`).join(", ") || "no messages";
  const latest = [["decision", s.decisions], ["risk", s.risks], ["answer", s.answers]].filter(([, l]) => l.items.length)
    .map(([k, l]) => el("li", { "data-kind": k }, el("span", { class: `badge ${k}`, text: `latest ${k}` }), " ",
      cutText(l.items[0].body, l.items[0].body_truncated), el("span", { class: "muted", text: ` (${plural(l.total, k)})` })));
  $("summary-discussion").replaceChildren(
    el("h3", { text: "Discussion" }, " ", ...flags(s)),
    el("div", { class: "facts", "data-facts": "discussion" }, `${plural(s.retained, "retained message")}: ${kinds}; ${s.by_status.open} open, ${s.by_status.resolved} resolved · last activity `, when(s.last_activity_at)),
    el("ul", {},
      el("li", { "data-list": "open_todos" }, el("strong", { text: plural(s.open_todos.total, "open todo") }), leftOff(s.open_todos)),
      ...s.open_todos.items.map((t) => el("li", { class: "todo", "data-id": t.message_id },
        el("span", { class: `badge prio ${t.priority}`, text: t.priority }), " ",
        t.requires_ack ? el("span", { class: "badge ack", text: t.acked ? "ACKed" : "ACK waiting" }) : null, " ",
        cutText(t.body, t.body_truncated), " ", when(t.created_at))),
      el("li", { "data-list": "open_questions" }, el("strong", { text: plural(s.open_questions.total, "unanswered question") }), leftOff(s.open_questions)),
      ...s.open_questions.items.map((q) => el("li", { class: "question", "data-id": q.message_id }, cutText(q.body, q.body_truncated), " ", when(q.created_at))),
      ...latest));
}
function renderHandoff(h) {
  const p = h.proposals.by_status;
  const facts = [plural(h.versions.total, "version") + " committed",
    `${plural(h.proposals.total, "proposal")} (${p.open} open, ${p.approved} approved, ${p.rejected} rejected)`,
    plural(h.leases.total, "lease") + " held", plural(h.handoffs.total, "handoff"),
    plural(h.completed_todos.total, "todo") + " completed", plural(h.messages.total, "message") + " recorded under it"];
  $("summary-handoff").replaceChildren(
    el("h3", { text: `What this session did (${h.session.participant.name})` }, " ", ...flags(h)),
    el("div", { class: "facts", "data-facts": "handoff" }, `${facts.join(" · ")} · last activity `, when(h.last_activity_at)),
    el("ul", {},
      ...h.completed_todos.items.map((t) => el("li", { class: "completed", "data-id": t.todo_message_id },
        `completed ${t.todo_message_id} on ${t.session_id} with ${t.answer_message_id} `, when(t.resolved_at))),
      h.completed_todos.truncated ? el("li", { class: "muted", text: leftOff(h.completed_todos) }) : null,
      ...h.versions.items.slice(0, 3).map((v) => el("li", {}, `v${v.number} `, cutText(v.summary, v.summary_truncated), " ", when(v.created_at)))));
}
export async function loadSummaries(sid) {
  const gen = ++summaryGen;
  if (!sid) { $("board-summary").hidden = true; return; }
  try {
    const [discussion, handoff] = await Promise.all([api("GET", `/workspace/boards/${enc(sid)}/summary`, undefined, true),
      api("GET", `/workspace/sessions/${enc(sid)}/summary`, undefined, true)]);
    if (gen !== summaryGen || sid !== board.sid) return;
    renderDiscussion(discussion); renderHandoff(handoff);
    $("board-summary").hidden = false; $("board-summary").title = `read ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    if (gen === summaryGen) $("board-summary").title = `summaries not refreshed: ${e.message} (showing the last good ones)`;
  }
}

// -- the operator's steps on a message: reply, answer a question, complete a todo ------------------
function messageActions(m) {
  const open = m.status === "open";
  return el("div", { class: "msg-actions" },
    el("button", { type: "button", class: "linkish", onclick: () => startReply(m, false) }, "Reply"),
    m.kind === "question" && open ? el("button", { type: "button", class: "linkish", onclick: () => startReply(m, true) }, "Answer") : null,
    m.kind === "todo" && open ? el("button", { type: "button", class: "linkish", onclick: () => startComplete(m) }, "Complete…") : null);
}
const reply = { to: null };
function startReply(m, asAnswer) {
  reply.to = m;
  const answer = $("compose-kind").querySelector("option[value=answer]");
  answer.disabled = !asAnswer; answer.hidden = !asAnswer;
  if (asAnswer) $("compose-kind").value = "answer";
  else if ($("compose-kind").value === "answer") $("compose-kind").value = "note";
  $("reply-text").textContent = `${asAnswer ? "answering" : "replying to"} ${m.kind} ${shortId(m.message_id)} by ${m.author ? m.author.name : "?"}: ${m.body.slice(0, 80)}${m.body.length > 80 ? "…" : ""}`;
  $("reply-chip").hidden = false;
  $("compose-body").focus();
}
export function endReply() {
  reply.to = null; $("reply-chip").hidden = true;
  const answer = $("compose-kind").querySelector("option[value=answer]");
  if ($("compose-kind").value === "answer") $("compose-kind").value = "note";
  answer.disabled = true; answer.hidden = true;
}
// Completing a todo: the assignment's fence is read at send time; the completion key is kept while the answer
// is the same, so a retry after a lost answer replays instead of completing twice.
const completing = { message: null, key: null, answer: null };
function startComplete(m) {
  completing.message = m; completing.key = null;
  $("complete-target").textContent = `${shortId(m.message_id)}: ${m.body.slice(0, 80)}${m.body.length > 80 ? "…" : ""}`;
  $("complete-state").textContent = ""; $("complete-state").className = "muted";
  $("complete-form").hidden = false; $("complete-answer").focus();
}
export function endComplete() { completing.message = null; $("complete-form").hidden = true; $("complete-answer").value = ""; }
function newKey() {
  return "console-" + (window.crypto && crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);
}
export async function complete(ev) {
  ev.preventDefault();
  const m = completing.message, answer = $("complete-answer").value;
  if (!m || !board.sid) return;
  if (!answer.trim()) { $("complete-state").textContent = "write the answer first"; return; }
  if (completing.answer !== answer || !completing.key) { completing.key = newKey(); completing.answer = answer; }
  $("complete-send").disabled = true; $("complete-state").textContent = "completing…"; $("complete-state").className = "muted";
  try {
    const base = `/workspace/boards/${enc(board.sid)}/messages/${enc(m.message_id)}`;
    const fence = (await api("GET", `${base}/assignment`)).assignment_fence;
    const done = await api("POST", `${base}/complete`, { answer, completion_key: completing.key, expected_assignment_fence: fence });
    endComplete();
    $("compose-state").textContent = `completed todo ${shortId(m.message_id)} with answer ${shortId(done.answer.message_id)}${done.replayed ? " (replayed)" : ""}`;
    board.refresh().catch(() => {});
  } catch (e) {
    $("complete-state").className = "card-error";
    $("complete-state").textContent = e.code === "assignment_stale" ? "not completed: the todo changed since (a new reply?): read it again, then send"
      : `not completed: ${e.message}${e.code ? ` (${e.code})` : ""}`;
  } finally { $("complete-send").disabled = false; }
}

// -- the Human Join composer: post_session_message as the operator ------------------------
export async function post(ev) {
  ev.preventDefault();
  const body = $("compose-body").value;
  if (!board.sid || !body.trim()) { $("compose-state").textContent = board.sid ? "write something first" : "choose a session first"; return; }
  $("compose-send").disabled = true; $("compose-state").textContent = "posting…";
  try {
    const message = { kind: $("compose-kind").value, priority: $("compose-priority").value, requires_ack: $("compose-ack").checked, body };
    if (reply.to) message.reply_to = reply.to.message_id;
    const m = await api("POST", `/workspace/boards/${enc(board.sid)}/messages`, message);
    merge([m]); $("compose-body").value = ""; $("compose-state").textContent = `posted ${m.kind} ${m.message_id}`;
    $("compose-state").className = "muted"; endReply();
  } catch (e) { $("compose-state").textContent = `not posted: ${e.message}`; $("compose-state").className = "card-error"; }
  finally { $("compose-send").disabled = !board.sid; }
}
