// The participant page's proposals: the editor of a section (or the whole document) sent as a proposal,
// its conflict shown when the section moved on, and the list of proposals with their diffs and decisions.
import { api, can, failure, rebuild, say, session, splitLines } from "./page-api.js";
import { docState, loadOutline, markLines } from "./page-document.js";
const { $, enc, el, shortId, when, diffView, lineDiff } = window.CR;

// -- proposing ------------------------------------------------------------------------
const edit = { base: 0, original: "", region: null, index: -1 };
function sectionText(index) {
  if (index < 0) return { region: { document: true }, original: docState.lines.map((l) => l + "\n").join(""), label: "the whole document" };
  const h = docState.headings[index];
  return { region: { heading: h.path }, original: docState.lines.slice(h.line - 1, h.end_line).map((l) => l + "\n").join(""), label: h.title };
}
export async function proposeTo(anchor) { // the section as it is now: its lines come with the newest rendering
  if (docState.outlined !== docState.version) await loadOutline().catch(() => {});
  openEditor(docState.headings.findIndex((h) => h.anchor === anchor));
}
export function openEditor(index) {
  const section = sectionText(index);
  Object.assign(edit, { base: docState.version, original: section.original, region: section.region, index });
  $("edit-region").value = index < 0 ? "" : String(index);
  $("edit-base").textContent = `Editing ${section.label} as of version ${docState.version}.`;
  $("edit-text").value = section.original;
  $("edit-summary").value = "";
  $("edit-preview").hidden = true;
  say($("edit-status"), "");
  $("edit-form").hidden = false;
  $("edit-panel").hidden = false;
  $("edit-text").focus();
}
export function previewDiff() {
  const preview = $("edit-preview");
  diffView(preview, lineDiff(edit.original, $("edit-text").value));
  preview.hidden = false;
}
export async function sendProposal(ev) {
  ev.preventDefault();
  const status = $("edit-status");
  const text = $("edit-text").value.replace(/\r\n/g, "\n");
  if (text === edit.original) { say(status, "Nothing changed: edit the text first.", true); return; }
  previewDiff();
  say(status, "sending…");
  try {
    const p = await api("POST", "/workspace/proposals", { base_version: edit.base, region: edit.region, text: text.endsWith("\n") || text === "" ? text : text + "\n", summary: $("edit-summary").value });
    $("edit-form").hidden = true; // sent: what it became is in Proposals; the status and the diff stay here
    say(status, p.rebased_from ? `Proposal ${shortId(p.id)} sent: the document had moved on, so it was rebased from version ${p.rebased_from} onto version ${p.base_version} cleanly.`
      : `Proposal ${shortId(p.id)} sent on version ${p.base_version}.`);
    status.append(" ", el("button", { type: "button", text: "Close", onclick: () => { $("edit-panel").hidden = true; } }));
    loadProposals().catch(() => {});
  } catch (e) {
    if (e.code === "stale_version") {
      const d = e.data, det = d.details || {};
      const current = d.current_version ?? det.current_version;
      say(status, `Conflict: the section changed since version ${edit.base} (now version ${current}) in a way that cannot be merged with your edit. The changes since are shown below; your text stays in the box. Choose "Start again from the head" to edit the current section.`, true);
      const changes = (d.changes || det.changes || []).map((c) => `# v${c.version} by ${c.author || "room"}: ${c.summary || ""}`).join("\n");
      diffView($("edit-preview"), `${changes}${changes ? "\n" : ""}${d.diff ?? det.diff ?? ""}`);
      $("edit-preview").hidden = false;
      const again = el("button", { type: "button", text: "Start again from the head", onclick: () => {
        const mine = $("edit-text").value; openEditor(edit.index);
        say($("edit-status"), "Reloaded the section at the head. Your earlier text is below the diff.");
        diffView($("edit-preview"), lineDiff(edit.original, mine)); $("edit-preview").hidden = false; } });
      status.append(" ", again);
    } else say(status, `Not sent: ${failure(e)}`, true);
  }
}

// -- proposals ------------------------------------------------------------------------
const versionTexts = new Map();
async function versionText(n) {
  if (n === docState.version) return docState.lines;
  if (!versionTexts.has(n)) versionTexts.set(n, api("GET", `/workspace/versions/${n}`).then((v) => splitLines(v.text)));
  return versionTexts.get(n);
}
export async function loadProposals() {
  const open = await api("GET", "/workspace/proposals?status=open&limit=200");
  const all = await api("GET", "/workspace/proposals?limit=200");
  docState.proposals = open.proposals;
  markLines();
  const decided = all.proposals.filter((p) => p.status !== "open").slice(-5).reverse();
  $("proposals-count").textContent = `${open.proposals.length}${open.next_cursor ? "+" : ""} open`;
  const list = $("proposals");
  const items = [...open.proposals, ...decided];
  rebuild(list, items.length ? items.map(proposalCard) : [el("li", { class: "empty", text: "No proposals yet." })]);
}
function proposalCard(p) {
  const diff = el("pre", { class: "diff", text: "…", tabindex: 0, "aria-label": `Diff of ${p.summary || p.id}` });
  const status = el("p", { class: "status", role: "status" });
  const card = el("li", { class: `card proposal ${p.status}`, "data-id": p.id },
    el("div", { class: "card-head" }, el("span", { class: `badge ${p.status}`, text: p.status }), " ",
      el("strong", { text: p.summary || "(no summary)" })),
    el("p", { class: "muted" }, `by ${p.author} · on version ${p.base_version}${p.rebased_from ? ` (rebased from ${p.rebased_from})` : ""} · lines ${p.lines[0]}–${p.lines[1]} · `, when(p.created_at),
      p.status !== "open" ? ` · ${p.status} by ${p.decided_by || "—"}${p.committed_version ? ` as version ${p.committed_version}` : ""}${p.reason ? `: ${p.reason}` : ""}` : ""),
    diff);
  if (p.status === "open") {
    versionText(p.base_version).then((lines) => {
      const before = lines.slice(p.lines[0] - 1, p.lines[1]).map((l) => l + "\n").join("");
      diffView(diff, lineDiff(before, p.text));
    }).catch((e) => say(diff, `diff unavailable: ${failure(e)}`, true));
    const buttons = el("div", { class: "buttons" });
    const act = async (verb, body) => {
      for (const b of buttons.querySelectorAll("button")) b.disabled = true;
      say(status, `${verb}…`);
      try {
        const answer = await api("POST", `/workspace/proposals/${enc(p.id)}/${verb}`, body);
        say(status, verb === "approve" ? `Approved: version ${answer.version.number}.` : `${verb === "reject" ? "Rejected" : "Withdrawn"}.`);
        loadProposals().catch(() => {});
      } catch (e) {
        say(status, `Could not ${verb}: ${failure(e)}`, true);
        for (const b of buttons.querySelectorAll("button")) b.disabled = false;
      }
    };
    const reason = el("input", { id: `reason-${p.id}`, type: "text", maxlength: 500, "aria-label": `Reason for ${p.summary || p.id}`, placeholder: "reason (optional)" });
    if (can("approve")) buttons.append(el("button", { type: "button", text: "Approve", onclick: () => act("approve", {}) }),
      reason, el("button", { type: "button", text: "Reject", onclick: () => act("reject", reason.value ? { reason: reason.value } : {}) }));
    if (can("propose") && session.me && p.author === session.me.participant.name) buttons.append(el("button", { type: "button", text: "Withdraw", onclick: () => act("withdraw", reason.value ? { reason: reason.value } : {}) }));
    card.append(buttons, status);
  } else diff.remove();
  return card;
}

