// The console's document panels: the room's head and text, its versions (12 a page, each as its diff or its
// whole text) and the proposals, each with its diff and Approve / Reject (a button says why Approve cannot work now).
import { actionFailed, api, cardError, errors, flash, PAGE } from "./console-api.js";
const { $, enc, el, plural, lineCount, when, fill, diffView, lineDiff, numbered, lineSpan, overlaps } = window.CR;

// -- panels -------------------------------------------------------------------
// Every version, 12 a page, newest first: Older / Newer walk the cursors of versions_list. The chosen
// version shows as its changes (the diff from the one before) or as its whole text, with line numbers.
const pager = { cursors: [null], at: 0 };
let head = 0, chosenVersion = null, followHead = true, versionView = "diff", behindTimer = null;
export async function loadRoom() {
  const cursor = pager.cursors[pager.at];
  const [room, doc, versions] = await Promise.all([api("GET", "/workspace/room"), api("GET", "/workspace/document"),
    api("GET", `/workspace/versions?limit=12${cursor ? "&cursor=" + enc(cursor) : ""}`)]);
  head = room.head_version;
  $("head").textContent = `v${room.head_version}`;
  // while the file cannot be written (a full disk): say so, and look again until it has caught up
  const behind = room.file_behind;
  $("file-behind").hidden = !behind;
  $("file-behind").textContent = behind ? behind.message : "";
  $("file-behind").title = behind ? `${behind.error}, since ${behind.since}` : "";
  if (behind && !behindTimer) behindTimer = setTimeout(() => { behindTimer = null; loadRoom().catch(() => {}); }, 2000);
  numbered($("document"), doc.text);
  $("doc-meta").textContent = `version ${doc.version} · ${plural(lineCount(doc.text), "line")} · ${plural(room.participants, "participant")} · ${plural(room.sessions, "live session")}`;
  const shown = versions.versions;
  $("versions-count").textContent = shown.length ? `v${shown[0].number}–v${shown[shown.length - 1].number} of ${plural(head, "version")}` : "";
  $("versions-older").disabled = !versions.next_cursor;
  $("versions-newer").disabled = pager.at === 0;
  pager.cursors[pager.at + 1] = versions.next_cursor || null;
  if (followHead || chosenVersion === null || chosenVersion > head) chosenVersion = head;
  fill($("versions"), shown, (v) => el("li", {},
    el("button", { type: "button", class: "linkish" + (v.number === chosenVersion ? " chosen" : ""), "aria-pressed": v.number === chosenVersion ? "true" : "false",
      onclick: () => { chosenVersion = v.number; followHead = v.number === head; loadRoom().catch((e) => flash(`version failed: ${e.message}`, true)); } }, `v${v.number}`),
    " ", el("span", { class: "who", text: v.author || "room" }), " ", when(v.created_at), " ",
    el("span", { class: "muted", text: [v.source, v.summary].filter(Boolean).join(" · ") })), "no versions");
  await showVersion();
}
async function showVersion() {
  const n = chosenVersion, view = $("version-diff");
  $("version-chosen").textContent = n ? `v${n}${n === head ? " (head)" : ""}` : "";
  $("version-as-diff").setAttribute("aria-pressed", String(versionView === "diff"));
  $("version-as-text").setAttribute("aria-pressed", String(versionView === "text"));
  if (!n) return;
  if (versionView === "text") {
    view.className = "text";
    numbered(view, (await api("GET", `/workspace/versions/${n}`)).text);
    view.setAttribute("aria-label", `version ${n}, its whole text`);
    return;
  }
  view.className = "diff";
  view.setAttribute("aria-label", `changes of version ${n}`);
  diffView(view, n > 1 ? (await api("GET", `/workspace/diff?from=${n - 1}&to=${n}`)).diff : "(version 1: the first text)");
}
export function page(step) {
  pager.at = Math.max(0, pager.at + step);
  loadRoom().catch((e) => flash(`versions failed: ${e.message}`, true));
}
export function viewAs(kind) { versionView = kind; showVersion().catch((e) => flash(`version failed: ${e.message}`, true)); }

const baseTexts = new Map();
async function baseText(number) {
  if (!baseTexts.has(number)) baseTexts.set(number, (await api("GET", `/workspace/versions/${number}`)).text);
  return baseTexts.get(number);
}
// Why Approve cannot work now, or null: another session's live lease on the proposal's lines (at the head),
// or an earlier attempt the room refused at this same head (the reason it gave). The approval itself stays
// the room's decision; this only keeps a button from promising what the room will refuse.
const refusals = new Map(); // proposal id -> { head, text }
function blocked(p, leases) {
  const refused = refusals.get(p.id);
  if (refused && refused.head === head) return refused.text;
  if (p.base_version !== head) return null; // the room rebases on approval: only trying tells
  const lease = leases.find((l) => l.session_id !== p.session_id && overlaps(l.lines, p.lines));
  return lease ? `blocked: ${lease.participant} holds ${lineSpan(lease.lines)} until ${new Date(lease.expires_at).toLocaleTimeString()}; wait, or break the lease` : null;
}
export async function loadProposals() {
  const [page, leasePage] = await Promise.all([api("GET", `/workspace/proposals?limit=${PAGE}`),
    api("GET", `/workspace/leases?limit=${PAGE}`)]);
  const items = page.proposals.slice().sort((x, y) => (x.status === "open" ? 0 : 1) - (y.status === "open" ? 0 : 1)
    || (x.status === "open" ? 0 : Date.parse(y.created_at) - Date.parse(x.created_at)));
  const shown = items.filter((p) => p.status === "open").concat(items.filter((p) => p.status !== "open").slice(0, 5));
  const open = items.filter((p) => p.status === "open").length;
  $("proposals-count").textContent = `${open}${page.next_cursor ? "+" : ""} open · ${page.proposals.length}${page.next_cursor ? "+ (truncated)" : ""} in all`;
  const cards = await Promise.all(shown.map(async (p) => {
    const diff = el("pre", { class: "diff", tabindex: "0", "aria-label": `diff of proposal ${p.id}` });
    // an open proposal as a reviewer reads it (proposal_review): whether it still applies at the head, and
    // what approving commits now; a decided one as its text against its base
    const review = p.status === "open" ? await api("GET", `/workspace/proposals/${enc(p.id)}/review`).catch(() => null) : null;
    if (review) diffView(diff, review.head_diff || review.diff);
    else {
      try {
        const base = (await baseText(p.base_version)).split("\n");
        const [start, end] = p.lines || [1, base.length];
        diffView(diff, lineDiff(base.slice(start - 1, end).join("\n"), p.text));
      } catch (e) { diffView(diff, p.text.split("\n").map((l) => "+" + l).join("\n")); }
    }
    const stale = review && !review.applies ? `no longer applies at v${review.head_version}: what it changes changed since v${p.base_version} (${plural(review.conflicts.length, "conflicting hunk")}); reject it, or ask ${p.author} to propose again on v${review.head_version}` : null;
    const why = p.status === "open" ? stale || blocked(p, leasePage.leases) : null;
    const actions = p.status === "open" ? el("div", { class: "actions" },
      el("button", { type: "button", class: "approve", disabled: Boolean(why), title: why || "commit it as the next version",
        "aria-describedby": why ? `why-${p.id}` : null, onclick: () => decide(p, "approve") }, "Approve"),
      el("input", { type: "text", placeholder: "reason (optional)", "aria-label": `reason to reject ${p.id}`, id: `reason-${p.id}` }),
      el("button", { type: "button", class: "reject", onclick: () => decide(p, "reject") }, "Reject"))
      : el("div", { class: "muted", text: `${p.status}${p.decided_by ? " by " + p.decided_by : ""}${p.committed_version ? " → v" + p.committed_version : ""}${p.reason ? " · " + p.reason : ""}` });
    const base = p.rebased_from ? `base v${p.base_version} (rebased from v${p.rebased_from})` : `on v${p.base_version}`;
    return el("article", { class: `card status-${p.status}`, "data-id": p.id },
      el("div", { class: "card-head" }, el("span", { class: `badge ${p.status}`, text: p.status }), " ",
        el("strong", { text: p.summary || "(no summary)" }), " ",
        el("span", { class: "muted", text: `by ${p.author} ${base}${p.lines ? " " + lineSpan(p.lines) : ""}${p.status === "open" && p.base_version !== head ? ` · head is v${head}${review && review.head_diff ? ": the diff shows what approving commits now" : ""}` : ""}` }), " ", when(p.created_at)),
      diff, actions, why ? el("p", { class: "why", id: `why-${p.id}`, text: why }) : null, cardError(`proposal:${p.id}`));
  }));
  $("proposals").replaceChildren(...(cards.length ? cards : [el("p", { class: "empty", text: "no proposals" })]));
}
async function decide(p, verb) {
  const reason = verb === "reject" ? ($(`reason-${p.id}`) || {}).value : undefined;
  const key = `proposal:${p.id}`;
  try {
    await api("POST", `/workspace/proposals/${enc(p.id)}/${verb}`, reason ? { reason } : {});
    errors.delete(key); refusals.delete(p.id);
    flash(`${verb === "approve" ? "approved" : "rejected"} ${p.id}`);
  } catch (e) {
    actionFailed(key, verb, e);
    if (verb === "approve" && (e.code === "proposal_conflict" || e.code === "lease_conflict")) {
      refusals.set(p.id, { head, text: e.code === "proposal_conflict"
        ? `no longer applies at v${head}: reject it, or ask ${p.author} to propose again on v${head}` : `blocked: ${e.message}` });
    }
  }
  await Promise.all([loadProposals(), loadRoom()]).catch(() => {});
}
