// The participant page's document: its text view (line by line, only changed lines touched, a new version
// followed from its event alone when it can be), the rendered view (the room's HTML rebuilt from an allow-list),
// the headings (outline, anchors, Propose buttons) and the leases and open proposals marked on their lines.
import { api, can, failure, say, splitLines } from "./page-api.js";
import { proposeTo } from "./page-proposals.js";
import { learn } from "./page-boards.js";
const { $, enc, el, plural, shortId } = window.CR;

// -- the document ---------------------------------------------------------------------
export const docState = { version: 0, lines: [], nodes: [], headings: [], leases: [], proposals: [], rendered: 0, built: 0, outlined: 0,
  html: "", outline: "", view: "text" };
let docLoading = null, docAgain = false;
export function lineNode(n, text) {
  const node = document.createElement("div");
  node.className = "ln"; node.dataset.n = n; node.textContent = text;
  return node;
}
export async function loadDocument() {
  if (docLoading) { docAgain = true; return docLoading; }
  docLoading = (async () => {
    do {
      docAgain = false;
      const doc = await api("GET", "/workspace/document");
      showDocument(doc);
    } while (docAgain);
  })();
  try { await docLoading; } finally { docLoading = null; }
  scheduleRendered();
}
function scheduleRendered() {
  // The headings (anchors, Propose buttons) come from the outline, once the versions settle, so a burst of
  // commits costs the room one outline, not one each; the rendered view, when shown, at once.
  clearTimeout(renderTimer);
  if (docState.view === "rendered" && docState.rendered !== docState.version)
    loadRendered().catch((e) => say($("doc-marks"), `rendered view: ${failure(e)}`, true));
  else if (docState.outlined !== docState.version)
    renderTimer = setTimeout(() => loadOutline().catch((e) => say($("doc-marks"), `headings: ${failure(e)}`, true)),
      docState.outlined ? 1000 : 0);
}
let renderTimer = null;
// A new version by its event alone: the changed lines read as a region, spliced in, checked against the
// version's content hash (so a guess that is wrong is never shown); anything else reads the whole document.
const withEndings = (text) => text.match(/[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$/g) || [];
async function sha256(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return "sha256:" + [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
export async function followVersion(p) {
  const span = p.lines;
  if (docLoading || !crypto.subtle || !Array.isArray(span) || p.version !== docState.version + 1 || !docState.raw) return loadDocument();
  const mine = docLoading = (async () => {
    const region = await api("GET", `/workspace/document?region=${enc(JSON.stringify({ lines: span }))}`);
    if (region.version !== p.version) return false;
    const added = withEndings(region.text), old = docState.raw, start = span[0] - 1;
    const tries = [added.length, ...Array.from({ length: added.length + 8 }, (_, k) => k).filter((k) => k !== added.length)];
    for (const k of tries.slice(0, 12)) {
      if (start + k > old.length) continue;
      const text = old.slice(0, start).join("") + region.text + old.slice(start + k).join("");
      if (await sha256(text) === p.content_hash) { showDocument({ text, version: p.version }); return true; }
    }
    return false;
  })();
  let done = false;
  try { done = await mine; } catch (e) { done = false; } finally { docLoading = null; }
  if (!done || docAgain) return loadDocument();
  scheduleRendered();
}
function showDocument(doc) {
  const fresh = splitLines(doc.text), old = docState.lines, box = $("doc-text");
  if (!docState.nodes.length || old.length === 0) {
    const frag = document.createDocumentFragment();
    docState.nodes = fresh.map((text, i) => frag.appendChild(lineNode(i + 1, text)));
    box.replaceChildren(frag);
  } else { // only the lines that changed: common head and tail stay in place
    let head = 0;
    const limit = Math.min(old.length, fresh.length);
    while (head < limit && old[head] === fresh[head]) head++;
    let tail = 0;
    while (tail < limit - head && old[old.length - 1 - tail] === fresh[fresh.length - 1 - tail]) tail++;
    const removed = docState.nodes.splice(head, old.length - head - tail);
    const added = fresh.slice(head, fresh.length - tail).map((text, i) => lineNode(head + i + 1, text));
    const before = docState.nodes[head] || null;
    for (const node of removed) node.remove();
    const frag = document.createDocumentFragment();
    for (const node of added) frag.appendChild(node);
    box.insertBefore(frag, before);
    docState.nodes.splice(head, 0, ...added);
    if (added.length !== removed.length) for (let i = head + added.length; i < docState.nodes.length; i++) docState.nodes[i].dataset.n = i + 1;
    for (const node of added) node.classList.add("changed");
    setTimeout(() => added.forEach((node) => node.classList.remove("changed")), 2500);
  }
  docState.lines = fresh;
  docState.raw = withEndings(doc.text);
  docState.version = doc.version;
  $("doc-meta").textContent = `version ${doc.version} · ${plural(fresh.length, "line")}`;
  markHeadings();
  markLines();
  document.body.dataset.version = doc.version;
}
function takeHeadings(answer) {
  const outline = JSON.stringify(answer.headings.map((h) => [h.anchor, h.line, h.end_line]));
  docState.headings = answer.headings;
  docState.outlined = answer.version;
  if (outline !== docState.outline) { docState.outline = outline; fillOutline(); }
  markHeadings();
  markLines();
}
let outlineLoading = null;
export async function loadOutline() {
  if (outlineLoading) return outlineLoading;
  outlineLoading = api("GET", "/workspace/document/outline").then(takeHeadings);
  try { await outlineLoading; } finally { outlineLoading = null; }
  followHash();
}
let renderLoading = null;
async function loadRendered() {
  if (renderLoading) return renderLoading;
  renderLoading = (async () => {
    const answer = await api("GET", "/workspace/document/rendered");
    docState.rendered = answer.version;
    docState.html = answer.html;
    docState.built = 0;
    if (docState.view === "rendered") buildRendered();
    takeHeadings(answer);
    followHash();
  })();
  try { await renderLoading; } finally { renderLoading = null; }
}
// The rendered view's elements are built only while it is shown: a hidden 1 MB rendering would cost the
// text view a second of the page's time at every version.
function buildRendered() {
  if (docState.built === docState.rendered) return;
  $("doc-rendered").replaceChildren(safeFragment(docState.html));
  docState.built = docState.rendered;
  markHeadings();
  markLines();
}
// The room's rendering, rebuilt node by node from an allow-list (belt and braces: the room already escapes raw HTML).
const ALLOWED = new Set(["P", "H1", "H2", "H3", "H4", "H5", "H6", "UL", "OL", "LI", "A", "CODE", "PRE", "EM", "STRONG", "BLOCKQUOTE",
  "HR", "BR", "IMG", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "DEL", "S"]);
const ATTRS = { A: ["href", "title"], IMG: ["src", "alt", "title"], OL: ["start"], TH: ["style"], TD: ["style"], CODE: ["class"], "*": ["data-line", "id"] };
function safeFragment(html) {
  const parsed = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html").body;
  const out = document.createDocumentFragment();
  const copy = (src, into) => {
    for (const child of src.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) { into.append(child.textContent); continue; }
      if (child.nodeType !== Node.ELEMENT_NODE) continue;
      if (!ALLOWED.has(child.tagName)) { copy(child, into); continue; }
      const node = document.createElement(child.tagName.toLowerCase());
      for (const name of [...(ATTRS[child.tagName] || []), ...ATTRS["*"]]) {
        const value = child.getAttribute(name);
        if (value === null) continue;
        if ((name === "href" || name === "src") && !/^(https?:|mailto:|#|\/(?!\/)|[^:]*$)/i.test(value)) continue;
        if (name === "style" && !/^text-align:(left|right|center)$/.test(value)) continue;
        node.setAttribute(name, value);
      }
      if (child.tagName === "A") node.setAttribute("rel", "noopener noreferrer nofollow");
      if (child.tagName === "IMG") node.setAttribute("loading", "lazy");
      copy(child, node);
      into.append(node);
    }
  };
  copy(parsed, out);
  return out;
}
function fillOutline() {
  const outline = $("outline"), region = $("edit-region");
  const label = (h) => `${"· ".repeat(h.level - 1)}${h.title || "(untitled)"} (line ${h.line})`;
  outline.replaceChildren(el("option", { value: "", text: "(top)" }), ...docState.headings.map((h) => el("option", { value: h.anchor, text: label(h) })));
  const chosen = region.value;
  region.replaceChildren(el("option", { value: "", text: "The whole document" }),
    ...docState.headings.map((h, i) => el("option", { value: String(i), text: label(h) })));
  region.value = [...region.options].some((o) => o.value === chosen) ? chosen : region.value;
}
function markHeadings() { // heading anchors and the propose buttons on the text view; only what changed is touched
  const want = new Map();
  for (const h of docState.headings) { const node = docState.nodes[h.line - 1]; if (node) want.set(node, h); }
  for (const node of [...$("doc-text").querySelectorAll(".ln.heading")]) {
    const h = want.get(node);
    if (h && node.dataset.anchor === h.anchor) { want.delete(node); continue; }
    node.classList.remove("heading"); node.removeAttribute("id"); delete node.dataset.anchor;
    node.querySelector(".tools")?.remove();
  }
  for (const [node, h] of want) {
    node.classList.add("heading");
    node.id = `t-${h.anchor}`;
    node.dataset.anchor = h.anchor;
    const tools = el("span", { class: "tools" }, el("a", { href: `#${h.anchor}`, class: "anchor", "aria-label": `Link to ${h.title}`, text: "#" }));
    if (can("propose")) tools.append(el("button", { type: "button", class: "small", "aria-label": `Propose a change to ${h.title}`, text: "Propose",
      onclick: () => proposeTo(h.anchor) }));
    node.prepend(tools);
  }
  for (const node of $("doc-rendered").querySelectorAll("h1[id],h2[id],h3[id],h4[id],h5[id],h6[id]")) {
    if (node.querySelector(".anchor")) continue;
    const index = docState.headings.findIndex((h) => h.anchor === node.id);
    node.append(" ", el("a", { href: `#${node.id}`, class: "anchor", "aria-label": `Link to ${node.textContent}`, text: "#" }));
    if (index >= 0 && can("propose")) node.append(" ", el("button", { type: "button", class: "small", text: "Propose", "aria-label": `Propose a change to ${docState.headings[index].title}`, onclick: () => proposeTo(node.id) }));
  }
}
export function markLines() { // leases and open proposals on their lines
  for (const node of $("doc-text").querySelectorAll(".ln.leased, .ln.proposed")) { node.classList.remove("leased", "proposed"); node.removeAttribute("title"); node.querySelectorAll(".mark").forEach((m) => m.remove()); }
  for (const node of $("doc-rendered").querySelectorAll(".leased, .proposed")) node.classList.remove("leased", "proposed");
  const notes = [];
  const mark = (lines, cls, label) => {
    if (!lines || lines.length !== 2) return;
    const [start, end] = lines;
    for (let n = start; n <= Math.max(start, end); n++) {
      const node = docState.nodes[n - 1];
      if (!node) continue;
      node.classList.add(cls);
      node.title = node.title ? `${node.title}; ${label}` : label;
    }
    const first = docState.nodes[start - 1];
    if (first) first.prepend(el("span", { class: `mark ${cls}`, text: cls === "leased" ? "lease" : "proposal" }));
    for (const block of $("doc-rendered").querySelectorAll("[data-line]")) {
      const n = Number(block.dataset.line);
      if (n >= start && n <= Math.max(start, end)) block.classList.add(cls);
    }
    notes.push(`${label} (lines ${start}–${end})`);
  };
  for (const lease of docState.leases) mark(lease.lines, "leased", `lease: ${lease.participant}, until ${new Date(lease.expires_at).toLocaleTimeString()}`);
  for (const p of docState.proposals) if (p.status === "open") mark(p.lines, "proposed", `proposal by ${p.author}: ${p.summary || "(no summary)"}${p.base_version !== docState.version ? ` (lines at v${p.base_version})` : ""}`);
  $("doc-marks").replaceChildren(...notes.map((t) => el("span", { class: "note", text: t })));
}
export function setView(view) {
  docState.view = view;
  $("view-text").setAttribute("aria-pressed", String(view === "text"));
  $("view-rendered").setAttribute("aria-pressed", String(view === "rendered"));
  $("doc-text").hidden = view !== "text";
  $("doc-rendered").hidden = view !== "rendered";
  if (view === "rendered" && docState.rendered === docState.version) buildRendered();
  if (view === "rendered" && docState.rendered !== docState.version) loadRendered().catch((e) => say($("doc-marks"), `rendered view: ${failure(e)}`, true));
}
export function goTo(anchor) {
  if (!anchor) { $("doc-panel").scrollIntoView(); return; }
  const target = docState.view === "text" ? $(`t-${anchor}`) : $(anchor);
  if (target) { target.scrollIntoView({ block: "start" }); target.classList.add("target"); setTimeout(() => target.classList.remove("target"), 2000); }
}
export function followHash() { const h = decodeURIComponent(location.hash.slice(1)); if (h.startsWith("h-")) goTo(h); }

// -- leases, marked on their lines (their holders join the board picker) ------------------
export async function loadLeases() {
  const page = await api("GET", "/workspace/leases?limit=200");
  docState.leases = page.leases;
  for (const lease of page.leases) learn(lease.session_id, `${lease.participant} (${shortId(lease.session_id)})`);
  markLines();
}
