// The participant page's versions: the list (newest first, 50 a page), one version's text, and the diff of two.
import { api, failure, say, splitLines } from "./page-api.js";
import { lineNode } from "./page-document.js";
const { $, enc, el, when, diffView } = window.CR;

// -- versions -------------------------------------------------------------------------
let versionsCursor = null, newestShown = 0;
export async function loadVersions(more) {
  const page = await api("GET", `/workspace/versions?limit=50${more && versionsCursor ? `&cursor=${enc(versionsCursor)}` : ""}`);
  versionsCursor = page.next_cursor;
  const list = $("versions");
  const items = page.versions.map((v) => el("li", { "data-n": v.number },
    el("button", { type: "button", class: "linkish", text: `v${v.number}`, "aria-label": `Open v${v.number}`, onclick: () => openVersion(v.number) }),
    " ", el("span", { class: "who", text: v.author || "room" }), " ", when(v.created_at), " ",
    el("span", { class: "summary", text: v.summary || `(${v.source})` }),
    v.number > 1 ? el("button", { type: "button", class: "small", text: "diff", "aria-label": `diff v${v.number - 1} to v${v.number}`, onclick: () => showDiff(v.number - 1, v.number) }) : null));
  if (more) list.append(...items); else { list.replaceChildren(...items); newestShown = page.versions.length ? page.versions[0].number : 0; }
  $("versions-more").hidden = !versionsCursor;
  $("versions-count").textContent = `${list.children.length}${versionsCursor ? "+" : ""} shown`;
  if (!$("diff-to").value && newestShown) { $("diff-to").value = newestShown; $("diff-from").value = Math.max(1, newestShown - 1); }
}
let viewing = 0; // only the latest choice fills the viewer
async function openVersion(n) {
  const mine = ++viewing;
  $("viewer-title").textContent = `Version ${n}`;
  try {
    const v = await api("GET", `/workspace/versions/${n}`);
    if (mine !== viewing) return;
    $("viewer-title").textContent = `Version ${n} · ${v.author || "room"} · ${v.summary || v.source}`;
    const frag = document.createDocumentFragment();
    splitLines(v.text).forEach((line, i) => frag.appendChild(lineNode(i + 1, line)));
    const viewer = $("viewer"); viewer.classList.add("lines"); viewer.replaceChildren(frag);
  } catch (e) { say($("viewer"), failure(e), true); }
}
export async function showDiff(from, to) {
  $("viewer-title").textContent = `Diff from version ${from} to version ${to}`;
  $("diff-from").value = from; $("diff-to").value = to;
  const viewer = $("viewer"), mine = ++viewing;
  try {
    const answer = await api("GET", `/workspace/diff?from=${enc(from)}&to=${enc(to)}`);
    if (mine !== viewing) return;
    viewer.classList.remove("lines");
    diffView(viewer, answer.diff);
  } catch (e) { if (mine === viewing) say(viewer, failure(e), true); }
}

