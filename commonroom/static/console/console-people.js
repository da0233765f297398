// The console's people panels: participants and live sessions, the leases they hold (Break, in two clicks),
// and the handoffs with their tasks (the assignee's questions answered here, a result approved or rejected).
import { actionFailed, api, cardError, errors, flash, PAGE } from "./console-api.js";
import { loadProposals } from "./console-document.js";
import { choose, renderPicker } from "./console-board.js";
const { $, enc, el, plural, when, count, fill, lineSpan } = window.CR;

export let sessions = [];
export async function loadPeople() {
  const [people, live] = await Promise.all([api("GET", `/workspace/participants?limit=${PAGE}`),
    api("GET", `/owner/sessions?limit=${PAGE}`)]);
  count($("people-count"), people.participants, people, "participant");
  count($("sessions-count"), live.sessions, live, "");
  fill($("participants"), people.participants, (p) => el("li", {},
    el("span", { class: "who", text: p.name }), " ", el("span", { class: "muted", text: `${p.sessions ?? 0} live session${p.sessions === 1 ? "" : "s"} · joined ` }), when(p.created_at)), "nobody has joined yet");
  sessions = live.sessions;
  fill($("sessions"), sessions, (s) => el("li", {},
    activity(s), " ", el("span", { class: "who", text: s.session.participant.name }), " ",
    el("button", { type: "button", class: "linkish mono", title: "show this session's board", onclick: () => choose(s.session.id) }, s.session.id),
    " ", el("span", { class: "muted", text: `${s.session.capabilities.join(", ")} · ${plural(s.board_messages, "message")}, ${s.open_messages} open · expires ` }), when(s.session.expires_at)), "no live sessions");
  renderPicker();
}
// Liveness from facts only: the board's last retained change, never presence.
function activity(s) {
  if (!s.last_activity_at) return el("span", { class: "dot idle", title: "no retained board activity" });
  const recent = Date.now() - Date.parse(s.last_activity_at) < 5 * 60 * 1000;
  return el("span", { class: `dot ${recent ? "recent" : "idle"}`, title: `last retained board activity ${s.last_activity_at}` });
}

function regionText(region) {
  if (!region) return "";
  if (Array.isArray(region.heading)) return "§ " + region.heading.join(" › ");
  return JSON.stringify(region);
}
export async function loadLeases() {
  const page = await api("GET", `/workspace/leases?limit=${PAGE}`);
  count($("leases-count"), page.leases, page, "live lease");
  fill($("leases"), page.leases, (l) => el("li", { "data-id": l.id }, el("span", { class: "who", text: l.participant }), " holds ",
    el("span", { class: "mono", text: lineSpan(l.lines) }),
    " ", el("span", { class: "muted", text: regionText(l.region) }), " · expires ", when(l.expires_at), " ",
    el("button", { type: "button", class: "break", title: `end ${l.participant}'s lease now (recorded as the operator)`,
      onclick: (ev) => breakLease(l, ev.currentTarget) }, "Break"), cardError(`lease:${l.id}`)), "no live leases");
}
// Breaking a lease takes two clicks: the first asks, the second breaks (no dialog).
async function breakLease(l, button) {
  if (!button.dataset.armed) {
    button.dataset.armed = "1"; button.textContent = `Break ${l.participant}'s lease?`; button.classList.add("reject");
    return;
  }
  const key = `lease:${l.id}`;
  try {
    await api("DELETE", `/workspace/leases/${enc(l.id)}`);
    errors.delete(key); flash(`broke ${l.participant}'s lease on ${lineSpan(l.lines)}`);
  } catch (e) { actionFailed(key, "break", e); }
  await Promise.all([loadLeases(), loadProposals()]).catch(() => {});
}

// Repainting a list keeps what the operator is typing in it (values by data-draft key) and the focus.
const drafts = new Map();
function keepDrafts(container, paint) {
  const active = document.activeElement;
  const focused = active && container.contains(active) ? active.dataset.draft : null;
  paint();
  for (const input of container.querySelectorAll("[data-draft]")) {
    if (drafts.has(input.dataset.draft)) input.value = drafts.get(input.dataset.draft);
    input.addEventListener("input", () => drafts.set(input.dataset.draft, input.value));
  }
  const again = focused && container.querySelector(`[data-draft="${CSS.escape(focused)}"]`);
  if (again) again.focus();
}

// The task of an open or accepted handoff: working, or input_required with the assignee's question for the
// owner, which the operator may answer here (task_update). The operator sees every task.
const LIVE_HANDOFF = ["open", "accepted"];
async function liveTasks(handoffs) {
  const live = handoffs.filter((h) => LIVE_HANDOFF.includes(h.status));
  const found = await Promise.all(live.map((h) =>
    api("GET", `/workspace/task?task_id=${enc(h.task_id)}`).then((t) => [h.id, t], () => [h.id, null])));
  return new Map(found);
}

let handoffsGen = 0;  // a newer load started: an older one that ends later paints nothing
export async function loadHandoffs() {
  const gen = ++handoffsGen;
  const page = await api("GET", `/workspace/handoffs?limit=${PAGE}`);
  const items = page.handoffs.slice().reverse();
  const tasks = await liveTasks(items);
  if (gen !== handoffsGen) return;
  count($("handoffs-count"), items, page, "handoff");
  keepDrafts($("handoffs"), () => fill($("handoffs"), items, (h) => {
    const task = tasks.get(h.id);
    return el("li", { "data-id": h.id }, el("span", { class: `badge ${h.status}`, text: h.status }), " ",
      el("strong", { text: h.summary }), " ", el("span", { class: "muted", text: `${h.owner ?? "?"} → ${h.assignee ?? "anyone"} · ` }),
      el("span", { class: "mono muted", title: `task ${h.task_id}`, text: `task ${h.task_id.slice(0, 12)}…` }),
      task ? el("span", { class: `badge task ${task.status}`, title: "the task's status", text: task.status.replace("_", " ") }) : null,
      " · ", when(h.updated_at),
      task && task.status === "input_required" ? questions(h, task) : null,
      h.status === "result_ready" ? resultStep(h) : null,
      cardError(`handoff:${h.id}`));
  }, "no handoffs"));
}
// Each outstanding input request: the assignee's question and a field per property it asks for.
function questions(h, task) {
  return el("div", { class: "step" }, ...Object.entries(task.inputRequests || {}).map(([key, request]) => {
    const params = request.params || request;
    const props = Object.entries((params.requestedSchema || {}).properties || { answer: { type: "string" } });
    return el("form", { class: "answer", "data-key": key, onsubmit: (ev) => { ev.preventDefault(); answerTask(h, task, key, ev.currentTarget); } },
      el("p", { class: "question" }, el("span", { class: "badge question", text: "question" }), " ",
        el("span", { text: params.message || "(no question text)" }), el("span", { class: "muted", text: ` — ${h.assignee ?? "the assignee"} asks` })),
      ...props.map(([name, prop]) => el("label", { class: "field" }, el("span", { class: "muted", text: prop.title || prop.description || name }),
        el("textarea", { rows: "2", "data-draft": `${task.taskId}:${key}:${name}`, "data-field": name, "data-type": prop.type || "string" }))),
      el("button", { type: "submit", class: "approve" }, "Send answer"));
  }));
}
async function answerTask(h, task, key, form) {
  const content = {};
  for (const input of form.querySelectorAll("[data-field]")) {
    const type = input.dataset.type, value = input.value;
    content[input.dataset.field] = type === "number" || type === "integer" ? Number(value)
      : type === "boolean" ? /^(true|yes|y|1)$/i.test(value.trim()) : value;
  }
  const where = `handoff:${h.id}`;
  try {
    await api("POST", "/workspace/task/update", { task_id: task.taskId, input_responses: { [key]: content } });
    errors.delete(where);
    for (const input of form.querySelectorAll("[data-draft]")) drafts.delete(input.dataset.draft);
    flash(`answered ${h.assignee ?? "the assignee"} on "${h.summary}"`);
  } catch (e) { actionFailed(where, "answer", e); }
  await loadHandoffs().catch(() => {});
}
// A result waiting for a decision: the result text, Approve, Reject with an optional reason.
function resultStep(h) {
  return el("div", { class: "step" },
    el("pre", { class: "result", tabindex: "0", "aria-label": `result of ${h.summary}`, text: h.result ?? "(no result text)" }),
    el("div", { class: "actions" },
      el("button", { type: "button", class: "approve", onclick: () => decideHandoff(h, "approve") }, "Approve result"),
      el("input", { type: "text", placeholder: "reason (optional)", "aria-label": `reason to reject the result of ${h.summary}`,
        id: `hreason-${h.id}`, "data-draft": `hreason:${h.id}` }),
      el("button", { type: "button", class: "reject", onclick: () => decideHandoff(h, "reject") }, "Reject result")));
}
async function decideHandoff(h, verb) {
  const reason = verb === "reject" ? ($(`hreason-${h.id}`) || {}).value : undefined;
  const where = `handoff:${h.id}`;
  try {
    await api("POST", `/workspace/handoffs/${enc(h.id)}/${verb}`, reason ? { reason } : {});
    errors.delete(where); drafts.delete(`hreason:${h.id}`);
    flash(`${verb === "approve" ? "approved" : "rejected"} the result of "${h.summary}"`);
  } catch (e) { actionFailed(where, verb, e); }
  await loadHandoffs().catch(() => {});
}
