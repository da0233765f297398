// The participant page's boards: the people the page has seen (the board picker), one board's messages as
// threads, posting and replying, completing a todo (its assignment), and ACKs.
import { api, can, failure, say, session } from "./page-api.js";
const { $, enc, el, plural, shortId, relative, when } = window.CR;

const known = new Map(); // session id -> label, for the board picker
export function learn(sid, label) { if (sid && !known.has(sid)) { known.set(sid, label || shortId(sid)); fillBoardPicker(); } }
// -- boards ---------------------------------------------------------------------------
let boardSid = null, replyTo = null;
// The board shown (a session id), and the session's own board shown first when it enters.
export function shownBoard() { return boardSid; }
export function showOwnBoard(me) {
  learn(me.id, `My board (${me.participant.name})`);
  boardSid = me.id;
  fillBoardPicker();
}
function fillBoardPicker() {
  const pick = $("board-pick");
  pick.replaceChildren(...[...known.entries()].map(([sid, label]) => el("option", { value: sid, text: label })));
  if (boardSid) pick.value = boardSid;
}
export async function openBoard(sid) {
  boardSid = sid; replyTo = null; showReply();
  learn(sid);
  $("board-pick").value = sid;
  $("assignment").hidden = true;
  await loadBoard();
}
export async function loadBoard() {
  if (!boardSid) return;
  const sid = boardSid, messages = [];
  let cursor = null;
  try {
    for (let pages = 0; pages < 10; pages++) {
      const page = await api("GET", `/workspace/boards/${enc(sid)}/messages?limit=200${cursor ? `&cursor=${enc(cursor)}` : ""}`);
      messages.push(...page.messages);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
  } catch (e) { say($("board-state"), `board: ${failure(e)}`, true); return; }
  if (sid !== boardSid) return;
  say($("board-state"), `${plural(messages.length, "message")}${cursor ? "+ (showing the oldest)" : ""}`);
  const byId = new Map(messages.map((m) => [m.message_id, m]));
  const roots = messages.filter((m) => !m.reply_to || !byId.has(m.reply_to));
  const replies = (id) => messages.filter((m) => m.reply_to === id);
  const item = (m, depth) => {
    const li = messageItem(m);
    const kids = replies(m.message_id);
    if (kids.length && depth < 6) li.append(el("ul", { class: "replies" }, ...kids.map((k) => item(k, depth + 1))));
    return li;
  };
  $("board").replaceChildren(...(roots.length ? roots.map((m) => item(m, 0)) : [el("li", { class: "empty", text: "Nothing on this board yet." })]));
  $("composer").hidden = !can("message");
}
function messageItem(m) {
  const ownBoard = session.me && boardSid === session.me.id;
  const status = el("span", { class: "status", role: "status" });
  const li = el("li", { class: `card msg ${m.kind} ${m.status}`, "data-id": m.message_id },
    el("div", { class: "card-head" }, el("span", { class: `badge kind-${m.kind}`, text: m.kind }),
      m.priority !== "normal" ? el("span", { class: `badge prio-${m.priority}`, text: m.priority }) : null,
      " ", el("span", { class: "who", text: m.author.name }), " ", when(m.created_at),
      m.kind === "todo" || m.kind === "question" ? el("span", { class: `badge ${m.status}`, text: m.status }) : null,
      m.requires_ack ? el("span", { class: "badge ack", text: m.first_acked_at ? `ACKed ${relative(m.first_acked_at)}` : "ACK pending" }) : null),
    el("p", { class: "body", text: m.body }));
  const buttons = el("div", { class: "buttons" });
  if (can("message")) {
    buttons.append(el("button", { type: "button", class: "small", text: "Reply", onclick: () => startReply(m, "note") }));
    if (m.kind === "question" && m.status === "open") buttons.append(el("button", { type: "button", class: "small", text: "Answer", onclick: () => startReply(m, "answer") }));
    if (m.kind === "todo" && m.status === "open") buttons.append(el("button", { type: "button", class: "small", text: "Complete…", onclick: () => openAssignment(m) }));
  }
  if (ownBoard && m.requires_ack && !m.first_acked_at && m.status === "open")
    buttons.append(el("button", { type: "button", class: "small", text: "ACK", onclick: () => ack(m, status) }));
  if (buttons.childElementCount) li.append(buttons, status);
  return li;
}
function startReply(m, kind) {
  replyTo = m; $("compose-kind").value = kind; showReply(); $("compose-body").focus();
}
export function cancelReply() { replyTo = null; showReply(); }
function showReply() {
  $("reply-to").hidden = !replyTo; $("reply-cancel").hidden = !replyTo;
  $("reply-to").textContent = replyTo ? `Replying to ${replyTo.author.name}'s ${replyTo.kind}: ${replyTo.body.slice(0, 80)}` : "";
}
export async function post(ev) {
  ev.preventDefault();
  const body = $("compose-body").value;
  if (!body.trim() || !boardSid) return;
  const message = { kind: $("compose-kind").value, body, priority: $("compose-priority").value };
  if ($("compose-ack").checked) message.requires_ack = true;
  if (replyTo) message.reply_to = replyTo.message_id;
  try {
    await api("POST", `/workspace/boards/${enc(boardSid)}/messages`, message);
    $("compose-body").value = ""; $("compose-ack").checked = false; replyTo = null; showReply();
    say($("compose-status"), "Posted.");
    loadBoard();
  } catch (e) { say($("compose-status"), `Not posted: ${failure(e)}`, true); }
}
async function openAssignment(m) {
  const box = $("assignment");
  box.hidden = false;
  box.replaceChildren(el("p", { text: "Reading the assignment…" }));
  let assignment;
  try { assignment = await api("GET", `/workspace/boards/${enc(boardSid)}/messages/${enc(m.message_id)}/assignment`); } catch (e) { box.replaceChildren(el("p", { class: "error", text: failure(e) })); return; }
  const answer = el("textarea", { id: "assignment-answer", rows: 3 });
  const status = el("p", { class: "status", role: "status" });
  const key = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random();
  box.replaceChildren(el("h3", { text: "Complete a todo" }),
    el("p", { class: "body", text: assignment.todo.body }),
    el("p", { class: "muted", text: `${plural(assignment.replies.length, "reply")} so far${assignment.completable ? "" : " · this todo cannot be completed now"}` }),
    el("ul", { class: "replies" }, ...assignment.replies.map((r) => el("li", {}, el("span", { class: "who", text: `${r.author.name}: ` }), el("span", { class: "body", text: r.body })))),
    el("label", { for: "assignment-answer", text: "Your answer" }), answer,
    el("div", { class: "buttons" },
      el("button", { type: "button", text: "Complete", disabled: !assignment.completable, onclick: async () => {
        if (!answer.value.trim()) return;
        try {
          await api("POST", `/workspace/boards/${enc(boardSid)}/messages/${enc(m.message_id)}/complete`,
            { answer: answer.value, completion_key: key, expected_assignment_fence: assignment.assignment_fence });
          box.hidden = true; loadBoard();
        } catch (e) {
          if (e.code === "assignment_stale") { say(status, "The todo changed while you worked (a new reply or edit). Read it again below, then complete.", true); setTimeout(() => openAssignment(m), 1500); } else say(status, failure(e), true);
        }
      } }),
      el("button", { type: "button", text: "Close", onclick: () => { box.hidden = true; } })), status);
  answer.focus();
}
async function ack(m, status) { // an ACK rides on an MCP call of this session (docs/boards.md, ACK): the same API as every agent
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "commonroom page", version: "1" }, ack_session_message_ids: [m.message_id] };
  try {
    const resp = await fetch("/mcp", { method: "POST", cache: "no-store", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "session_discussion_summary", Authorization: `Bearer ${session.bearer}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "session_discussion_summary", arguments: { session_id: session.me.id }, _meta: meta } }) });
    const data = await resp.json().catch(() => null);
    if (!resp.ok || !data || data.error) throw new Error((data && data.error && data.error.message) || `${resp.status}`);
    say(status, "ACKed.");
    loadBoard();
  } catch (e) { say(status, `ACK failed: ${e.message}`, true); }
}

