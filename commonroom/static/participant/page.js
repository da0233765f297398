// The commonroom participant page: plain JavaScript, no build, no library (the console's kit of helpers aside).
// It calls the room's HTTP API with the session's bearer in an Authorization header, like any client.
// Everything from the room is set with textContent, except the document's rendered HTML, which the room
// makes with markdown-it-py (raw HTML off) and which is rebuilt here from an allow-list of elements.
"use strict";
(() => {
  // The small helpers the console's scripts share (console-kit.js, served here too): elements, times, diffs.
  const { $, enc, el, plural, shortId, sleep, relative, when, diffView, lineDiff, tickTimes } = window.CR;
  const KEY = "commonroom-session";
  const JOIN_PREFIX = "commonroom://join/";

  function say(node, text, bad) { node.textContent = text || ""; node.classList.toggle("error", !!bad); }
  function splitLines(text) { // as an editor counts them: the final newline ends the last line
    if (text === "") return [];
    const lines = text.split(/\r\n|\n|\r/);
    if (/(\r\n|\n|\r)$/.test(text)) lines.pop();
    return lines;
  }

  // -- the session and the API -----------------------------------------------------------
  let bearer = sessionStorage.getItem(KEY);
  let me = null, caps = new Set();
  const can = (cap) => caps.has(cap);
  class ApiError extends Error {}
  async function api(method, path, body) {
    const init = { method, cache: "no-store", headers: { Accept: "application/json", Authorization: `Bearer ${bearer}` } };
    if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    const resp = await fetch(path, init);
    const data = await resp.json().catch(() => null);
    if (!resp.ok) {
      const err = new ApiError((data && data.message) || `${resp.status} ${resp.statusText}`);
      err.status = resp.status; err.code = data && data.error; err.data = data || {};
      if (resp.status === 401) sessionEnded(err);
      throw err;
    }
    return data;
  }
  const failure = (e) => e.code ? `${e.code}: ${e.message}` : String(e.message || e);

  // -- joining ------------------------------------------------------------------------
  function payloadOf(token) {
    try {
      const body = token.slice(JOIN_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/");
      const json = new TextDecoder().decode(Uint8Array.from(atob(body + "=".repeat((4 - body.length % 4) % 4)), (c) => c.charCodeAt(0)));
      return JSON.parse(json);
    } catch (e) { return null; }
  }
  const JOIN_ADVICE = {
    invitation_redeemed: "This invitation was already used (each works once). Ask whoever sent it for a new one.",
    invitation_expired: "This invitation has expired. Ask whoever sent it for a new one.",
    invitation_revoked: "This invitation was revoked. Ask whoever sent it for a new one.",
    unauthorized: "The room does not know this invitation: it may be for another room, or mistyped.",
  };
  async function join(token) {
    token = token.trim();
    const error = $("join-error");
    say(error, "");
    if (!token.startsWith(JOIN_PREFIX)) { say(error, `An invitation starts with ${JOIN_PREFIX}`, true); return; }
    const payload = payloadOf(token);
    const elsewhere = payload && payload.transport && payload.transport.port && Number(payload.transport.port) !== Number(location.port || 80)
      ? ` This invitation names the room at ${payload.transport.address}:${payload.transport.port}; if that is another room, open its address instead.` : "";
    try {
      const resp = await fetch("/workspace/join", { method: "POST", cache: "no-store",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ invitation: token, client: "commonroom page" }) });
      const data = await resp.json().catch(() => null);
      if (!resp.ok) {
        const code = data && data.error;
        say(error, `${JOIN_ADVICE[code] || ""} (${code || resp.status}: ${(data && data.message) || resp.statusText})${elsewhere}`.trim(), true);
        return;
      }
      bearer = data.token;
      sessionStorage.setItem(KEY, bearer);
      $("join-token").value = "";
      await enter();
    } catch (e) { say(error, `The room did not answer: ${e.message}`, true); }
  }
  function sessionEnded(err) {
    bearer = null; active = false;
    sessionStorage.removeItem(KEY);
    if (liveAbort) liveAbort.abort();
    $("room").hidden = true; $("join-panel").hidden = false; $("leave").hidden = true;
    setLive("not joined", "");
    notice(`Your session has ended (${err.code || "unauthorized"}: ${err.message}). Join again with a new invitation.`);
  }
  function notice(text) { const n = $("notice"); n.textContent = text || ""; n.hidden = !text; }

  // -- the document ---------------------------------------------------------------------
  const docState = { version: 0, lines: [], nodes: [], headings: [], leases: [], proposals: [], rendered: 0, built: 0, outlined: 0,
    html: "", outline: "", view: "text" };
  let docLoading = null, docAgain = false;
  function lineNode(n, text) {
    const node = document.createElement("div");
    node.className = "ln"; node.dataset.n = n; node.textContent = text;
    return node;
  }
  async function loadDocument() {
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
  async function followVersion(p) {
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
  async function loadOutline() {
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
  // A list rebuilt from the room keeps what the person was typing in it (by field id) and the focus.
  function rebuild(list, items) {
    const typed = new Map([...list.querySelectorAll("input[id], textarea[id]")].map((f) => [f.id, f.value]));
    const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.id : null;
    list.replaceChildren(...items);
    for (const [id, value] of typed) { const f = document.getElementById(id); if (f && list.contains(f) && value) f.value = value; }
    if (focused) document.getElementById(focused)?.focus();
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
  function markLines() { // leases and open proposals on their lines
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
  function setView(view) {
    docState.view = view;
    $("view-text").setAttribute("aria-pressed", String(view === "text"));
    $("view-rendered").setAttribute("aria-pressed", String(view === "rendered"));
    $("doc-text").hidden = view !== "text";
    $("doc-rendered").hidden = view !== "rendered";
    if (view === "rendered" && docState.rendered === docState.version) buildRendered();
    if (view === "rendered" && docState.rendered !== docState.version) loadRendered().catch((e) => say($("doc-marks"), `rendered view: ${failure(e)}`, true));
  }
  function goTo(anchor) {
    if (!anchor) { $("doc-panel").scrollIntoView(); return; }
    const target = docState.view === "text" ? $(`t-${anchor}`) : $(anchor);
    if (target) { target.scrollIntoView({ block: "start" }); target.classList.add("target"); setTimeout(() => target.classList.remove("target"), 2000); }
  }
  function followHash() { const h = decodeURIComponent(location.hash.slice(1)); if (h.startsWith("h-")) goTo(h); }

  // -- proposing ------------------------------------------------------------------------
  const edit = { base: 0, original: "", region: null, index: -1 };
  function sectionText(index) {
    if (index < 0) return { region: { document: true }, original: docState.lines.map((l) => l + "\n").join(""), label: "the whole document" };
    const h = docState.headings[index];
    return { region: { heading: h.path }, original: docState.lines.slice(h.line - 1, h.end_line).map((l) => l + "\n").join(""), label: h.title };
  }
  async function proposeTo(anchor) { // the section as it is now: its lines come with the newest rendering
    if (docState.outlined !== docState.version) await loadOutline().catch(() => {});
    openEditor(docState.headings.findIndex((h) => h.anchor === anchor));
  }
  function openEditor(index) {
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
  function previewDiff() {
    const preview = $("edit-preview");
    diffView(preview, lineDiff(edit.original, $("edit-text").value));
    preview.hidden = false;
  }
  async function sendProposal(ev) {
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
  async function loadProposals() {
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
      if (can("propose") && me && p.author === me.participant.name) buttons.append(el("button", { type: "button", text: "Withdraw", onclick: () => act("withdraw", reason.value ? { reason: reason.value } : {}) }));
      card.append(buttons, status);
    } else diff.remove();
    return card;
  }

  // -- versions -------------------------------------------------------------------------
  let versionsCursor = null, newestShown = 0;
  async function loadVersions(more) {
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
  async function showDiff(from, to) {
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

  // -- leases and people -------------------------------------------------------------------
  const known = new Map(); // session id -> label, for the board picker
  function learn(sid, label) { if (sid && !known.has(sid)) { known.set(sid, label || shortId(sid)); fillBoardPicker(); } }
  async function loadLeases() {
    const page = await api("GET", "/workspace/leases?limit=200");
    docState.leases = page.leases;
    for (const lease of page.leases) learn(lease.session_id, `${lease.participant} (${shortId(lease.session_id)})`);
    markLines();
  }

  const drafts = new Map(); // what a person typed into a handoff's fields, kept while its card is rebuilt
  // -- handoffs -------------------------------------------------------------------------
  async function loadHandoffs() {
    const page = await api("GET", "/workspace/handoffs?limit=100");
    const list = $("handoffs");
    const live = page.handoffs.filter((h) => !["approved", "rejected", "cancelled"].includes(h.status));
    const done = page.handoffs.filter((h) => ["approved", "rejected", "cancelled"].includes(h.status)).slice(-5);
    $("handoffs-count").textContent = `${live.length} open`;
    const items = [...live, ...done];
    rebuild(list, items.length ? items.map(handoffCard) : [el("li", { class: "empty", text: "No handoffs." })]);
  }
  function handoffCard(h) {
    const name = me ? me.participant.name : "";
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
  async function createHandoff(ev) {
    ev.preventDefault();
    const summary = $("handoff-summary").value.trim(), assignee = $("handoff-assignee").value.trim();
    if (!summary) return;
    try {
      await api("POST", "/workspace/handoffs", assignee ? { summary, assignee } : { summary });
      say($("handoff-status"), "Handed off."); $("handoff-summary").value = ""; $("handoff-assignee").value = "";
      loadHandoffs().catch(() => {});
    } catch (e) { say($("handoff-status"), failure(e), true); }
  }

  // -- boards ---------------------------------------------------------------------------
  let boardSid = null, replyTo = null;
  function fillBoardPicker() {
    const pick = $("board-pick");
    pick.replaceChildren(...[...known.entries()].map(([sid, label]) => el("option", { value: sid, text: label })));
    if (boardSid) pick.value = boardSid;
  }
  async function openBoard(sid) {
    boardSid = sid; replyTo = null; showReply();
    learn(sid);
    $("board-pick").value = sid;
    $("assignment").hidden = true;
    await loadBoard();
  }
  async function loadBoard() {
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
    const ownBoard = me && boardSid === me.id;
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
  function showReply() {
    $("reply-to").hidden = !replyTo; $("reply-cancel").hidden = !replyTo;
    $("reply-to").textContent = replyTo ? `Replying to ${replyTo.author.name}'s ${replyTo.kind}: ${replyTo.body.slice(0, 80)}` : "";
  }
  async function post(ev) {
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
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "session_discussion_summary", Authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "session_discussion_summary", arguments: { session_id: me.id }, _meta: meta } }) });
      const data = await resp.json().catch(() => null);
      if (!resp.ok || !data || data.error) throw new Error((data && data.error && data.error.message) || `${resp.status}`);
      say(status, "ACKed.");
      loadBoard();
    } catch (e) { say(status, `ACK failed: ${e.message}`, true); }
  }

  // -- live: the room's events through fetch() (EventSource cannot send Authorization) ----------------
  let active = false, liveAbort = null, lastEventId = null, away = false;
  function setLive(text, cls) { const n = $("live"); n.textContent = text; n.className = `live ${cls || ""}`; }
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
    else if (t.startsWith("board.")) { learn(p.board_session_id); if (p.board_session_id === boardSid) reload("board"); }
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
        const headers = { Accept: "text/event-stream", Authorization: `Bearer ${bearer}` };
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

  // -- entering the room ------------------------------------------------------------------
  async function enter() {
    try {
      me = await api("GET", "/workspace/session");
    } catch (e) {
      if (e.status !== 401) { notice(`The room did not answer: ${failure(e)}`); $("join-panel").hidden = false; }
      return;
    }
    caps = new Set(me.capabilities);
    notice("");
    $("join-panel").hidden = true; $("room").hidden = false; $("leave").hidden = false;
    $("who").textContent = `${me.participant.name} · ${me.capabilities.join(", ")}`;
    $("propose-open").hidden = !can("propose");
    $("handoff-form").hidden = !can("handoff");
    learn(me.id, `My board (${me.participant.name})`);
    boardSid = me.id;
    fillBoardPicker();
    const room = await api("GET", "/workspace/room");
    $("room-name").textContent = room.file_name;
    document.title = `${room.file_name} · commonroom`;
    lastEventId = room.last_event_id;
    active = true;
    await loadDocument();
    setLive(can("observe") ? "connecting…" : "checking every 5 s (no observe capability)", "");
    if (can("observe")) follow(); else pollWithoutObserve();
    refreshAll();
  }
  function leave() {
    active = false; if (liveAbort) liveAbort.abort();
    sessionStorage.removeItem(KEY); bearer = null;
    location.replace(location.pathname);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const kinds = ["note", "question", "answer", "todo", "decision", "risk", "progress", "guidance", "proposal"];
    $("compose-kind").replaceChildren(...kinds.map((k) => el("option", { value: k, text: k })));
    $("join-form").addEventListener("submit", (ev) => { ev.preventDefault(); join($("join-token").value); });
    $("leave").addEventListener("click", leave);
    $("view-text").addEventListener("click", () => setView("text"));
    $("view-rendered").addEventListener("click", () => setView("rendered"));
    $("outline").addEventListener("change", () => { const a = $("outline").value; if (a) history.replaceState(null, "", `#${a}`); goTo(a); });
    $("propose-open").addEventListener("click", () => openEditor(-1));
    $("edit-region").addEventListener("change", () => openEditor($("edit-region").value === "" ? -1 : Number($("edit-region").value)));
    $("edit-diff").addEventListener("click", previewDiff);
    $("edit-form").addEventListener("submit", sendProposal);
    $("edit-cancel").addEventListener("click", () => { $("edit-panel").hidden = true; });
    $("versions-more").addEventListener("click", () => loadVersions(true).catch((e) => say($("versions-count"), failure(e), true)));
    $("diff-form").addEventListener("submit", (ev) => { ev.preventDefault(); showDiff(Number($("diff-from").value), Number($("diff-to").value)); });
    $("handoff-form").addEventListener("submit", createHandoff);
    $("board-pick").addEventListener("change", () => openBoard($("board-pick").value));
    $("board-open").addEventListener("submit", (ev) => { ev.preventDefault(); const sid = $("board-sid").value.trim(); if (sid) openBoard(sid); });
    $("composer").addEventListener("submit", post);
    $("compose-body").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) post(ev); });
    $("reply-cancel").addEventListener("click", () => { replyTo = null; showReply(); });
    window.addEventListener("hashchange", followHash);
    setInterval(tickTimes, 30000);
    // an invitation link: #join=<token body>. Taken out of the address bar before anything else happens.
    const hash = location.hash.slice(1);
    let invitation = null;
    if (hash.startsWith("join=")) invitation = JOIN_PREFIX + hash.slice(5);
    else if (decodeURIComponent(hash).startsWith(JOIN_PREFIX)) invitation = decodeURIComponent(hash);
    if (invitation) history.replaceState(null, "", location.pathname + location.search);
    if (invitation) join(invitation);
    else if (bearer) enter();
  });
})();
