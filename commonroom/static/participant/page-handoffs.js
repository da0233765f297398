// The participant page's handoffs: the list, each card's next steps for this session (accept, ask, complete,
// approve, reject, cancel), the task's questions and answers, and a new handoff.
import { api, can, failure, rebuild, say, session } from "./page-api.js";
const { $, enc, el, when } = window.CR;

const drafts = new Map(); // what a person typed into a handoff's fields, kept while its card is rebuilt
// -- handoffs -------------------------------------------------------------------------
export async function loadHandoffs() {
  const page = await api("GET", "/workspace/handoffs?limit=100");
  const list = $("handoffs");
  const live = page.handoffs.filter((h) => !["approved", "rejected", "cancelled"].includes(h.status));
  const done = page.handoffs.filter((h) => ["approved", "rejected", "cancelled"].includes(h.status)).slice(-5);
  $("handoffs-count").textContent = `${live.length} open`;
  const items = [...live, ...done];
  rebuild(list, items.length ? items.map(handoffCard) : [el("li", { class: "empty", text: "No handoffs." })]);
}
function handoffCard(h) {
  const name = session.me ? session.me.participant.name : "";
  const mine = h.owner === name, assigned = h.assignee === name;
  const status = el("p", { class: "status", role: "status" });
  const body = el("div", { class: "task" });
  const card = el("li", { class: `card handoff ${h.status}`, "data-id": h.id },
    el("div", { class: "card-head" }, el("span", { class: `badge ${h.status}`, text: h.status.replace("_", " ") }), " ", el("strong", { text: h.summary })),
    el("p", { class: "muted" }, `${h.owner} → ${h.assignee || "anyone"} · `, when(h.updated_at)),
    h.constraints ? el("p", { class: "constraints", text: h.constraints }) : null,
    h.result ? el("div", { class: "result" }, el("span", { class: "label", text: "Result: " }), el("span", { class: "body", text: h.result })) : null,
    h.reason ? el("p", { class: "muted", text: `reason: ${h.reason}` }) : null, body);
  const buttons = el("div", { class: "buttons" });
  const field = (label, multiline) => {
    const id = `f-${h.id}-${label.replace(/\W+/g, "-")}`;
    const input = el(multiline ? "textarea" : "input", { id, rows: multiline ? 2 : undefined, type: multiline ? undefined : "text" });
    input.value = drafts.get(id) || "";
    input.addEventListener("input", () => drafts.set(id, input.value));
    return [el("label", { for: id, text: label }), input];
  };
  const act = async (path, payload, done) => {
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    say(status, "…");
    try {
      await api("POST", path, payload); say(status, done);
      for (const id of [...drafts.keys()]) if (id.startsWith(`f-${h.id}-`)) drafts.delete(id);
      loadHandoffs().catch(() => {});
    } catch (e) {
      say(status, failure(e), true); for (const b of card.querySelectorAll("button")) b.disabled = false;
    }
  };
  const base = `/workspace/handoffs/${enc(h.id)}`;
  if (can("handoff") && h.status === "open" && (!h.assignee || assigned))
    buttons.append(el("button", { type: "button", text: "Accept", onclick: () => act(`${base}/accept`, {}, "Accepted.") }));
  if (h.status === "accepted" && assigned) {
    const [ql, q] = field("Question for the owner"), [rl, r] = field("Result", true);
    buttons.append(ql, q, el("button", { type: "button", text: "Ask for input", onclick: () => q.value && act(`${base}/request-input`, { message: q.value }, "Asked.") }),
      rl, r, el("button", { type: "button", text: "Complete", onclick: () => r.value && act(`${base}/complete`, { result: r.value }, "Completed.") }));
  }
  if (h.status === "result_ready" && can("approve")) {
    const [rl, r] = field("Reason (optional)");
    buttons.append(el("button", { type: "button", text: "Approve the result", onclick: () => act(`${base}/approve`, {}, "Approved.") }),
      rl, r, el("button", { type: "button", text: "Reject the result", onclick: () => act(`${base}/reject`, r.value ? { reason: r.value } : {}, "Rejected.") }));
  }
  if ((h.status === "open" || h.status === "accepted") && (mine || can("approve")))
    buttons.append(el("button", { type: "button", class: "danger", text: "Cancel the handoff", onclick: () => act(`${base}/cancel`, {}, "Cancelled.") }));
  if ((h.status === "open" || h.status === "accepted") && (mine || assigned || can("approve"))) {
    api("GET", `/workspace/task?task_id=${enc(h.task_id)}`).then((task) => {
      body.append(el("p", { class: "muted" }, "task ", el("span", { class: `badge task ${task.status}`, text: task.status.replace("_", " ") }), task.statusMessage ? ` · ${task.statusMessage}` : ""));
      for (const [key, request] of Object.entries(task.inputRequests || {})) {
        const question = (request.params && request.params.message) || key;
        body.append(el("p", { class: "question" }, el("span", { class: "label", text: "Question: " }), el("span", { class: "body", text: question })));
        if (mine || can("approve")) {
          const [al, a] = field(`Answer to ${key}`, true);
          body.append(al, a, el("button", { type: "button", text: "Answer", onclick: () => a.value && act("/workspace/task/update", { task_id: h.task_id, input_responses: { [key]: { answer: a.value } } }, "Answered.") }));
        }
      }
      for (const [key, response] of Object.entries(task.inputResponses || {}))
        body.append(el("p", { class: "answer" }, el("span", { class: "label", text: `Answer (${key}): ` }), el("span", { class: "body", text: (response && response.answer) ?? JSON.stringify(response) })));
    }).catch(() => {});
  }
  card.append(buttons, status);
  return card;
}
export async function createHandoff(ev) {
  ev.preventDefault();
  const summary = $("handoff-summary").value.trim(), assignee = $("handoff-assignee").value.trim();
  if (!summary) return;
  try {
    await api("POST", "/workspace/handoffs", assignee ? { summary, assignee } : { summary });
    say($("handoff-status"), "Handed off."); $("handoff-summary").value = ""; $("handoff-assignee").value = "";
    loadHandoffs().catch(() => {});
  } catch (e) { say($("handoff-status"), failure(e), true); }
}

