// The commonroom console: plain JavaScript, no build, no library.
// Everything from the room is rendered with textContent (never as HTML).
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;
  const PAGE = 200;

  // -- small helpers ---------------------------------------------------------
  function el(tag, opts, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(opts || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const plural = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;
  // Lines as an editor counts them: the final newline ends the last line, it does not start another.
  const lineCount = (text) => (text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0));
  // An id as the tables print it: the prefix and 8 characters (the whole id stays in the title).
  const shortId = (id) => { const cut = id.indexOf("_") + 1; return id.length > cut + 8 ? id.slice(0, cut + 8) + "…" : id; };
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function relative(stamp) {
    const then = Date.parse(stamp);
    if (Number.isNaN(then)) return String(stamp);
    const s = Math.round((Date.now() - then) / 1000);
    const future = s < 0, a = Math.abs(s);
    const text = a < 10 ? "just now" : a < 60 ? `${a}s` : a < 3600 ? `${Math.floor(a / 60)}m`
      : a < 86400 ? `${Math.floor(a / 3600)}h` : `${Math.floor(a / 86400)}d`;
    return a < 10 ? text : future ? `in ${text}` : `${text} ago`;
  }
  function when(stamp) {
    if (!stamp) return el("span", { class: "muted", text: "—" });
    const exact = new Date(stamp);
    return el("time", { datetime: stamp, title: `${exact.toLocaleString()} (${stamp})`, "data-ts": stamp,
      text: relative(stamp) });
  }
  function tickTimes() {
    for (const node of document.querySelectorAll("time[data-ts]")) node.textContent = relative(node.dataset.ts);
  }
  function count(node, items, page, noun) {
    const more = page && page.next_cursor;
    const n = items.length, word = noun && n !== 1 && !more ? noun + "s" : noun;
    node.textContent = `${n}${more ? "+" : ""} ${more && noun ? noun + "s" : word}${more ? " (truncated: showing the first " + n + ")" : ""}`;
  }
  function fill(node, items, render, empty) {
    node.replaceChildren(...(items.length ? items.map(render) : [el("li", { class: "empty", text: empty })]));
  }

  // -- the API (the same operations as every client; cookie auth) ------------------
  let inflight = 0;
  function busy(delta) {
    inflight += delta;
    $("inflight").hidden = inflight === 0;
    $("inflight").textContent = `${inflight} request${inflight === 1 ? "" : "s"} in flight`;
  }
  async function api(method, path, body, quiet) {
    if (!quiet) busy(1);
    try {
      const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
      if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
      const resp = await fetch(path, init);
      const data = await resp.json().catch(() => null);
      if (resp.status === 401) loginEnded();
      if (!resp.ok) {
        const err = new Error((data && data.message) || `${resp.status} ${resp.statusText}`);
        err.status = resp.status; err.code = data && data.error;
        throw err;
      }
      return data;
    } finally { if (!quiet) busy(-1); }
  }

  // -- panels -------------------------------------------------------------------
  function diffView(node, text) {
    const lines = text ? text.replace(/\n$/, "").split("\n") : [];
    node.replaceChildren(...(lines.length ? lines.map((line) => el("span", {
      class: line.startsWith("@@") ? "hunk" : line.startsWith("+++") || line.startsWith("---") ? "file"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx", text: line + "\n" })) : [el("span", { class: "muted", text: "no changes" })]));
  }
  // A line diff (LCS) of two texts, as unified-style lines: for proposals.
  function lineDiff(before, after) {
    const a = before.replace(/\n$/, "").split("\n"), b = after.replace(/\n$/, "").split("\n");
    if (a.length * b.length > 400000) return ["@@ too large to diff here @@", ...b.map((l) => "+" + l)].join("\n");
    const m = a.length, n = b.length, t = Array.from({ length: m + 1 }, () => new Uint32Array(n + 1));
    for (let i = m - 1; i >= 0; i--) for (let j = n - 1; j >= 0; j--)
      t[i][j] = a[i] === b[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
    const out = []; let i = 0, j = 0;
    while (i < m && j < n) {
      if (a[i] === b[j]) { out.push(" " + a[i]); i++; j++; } else if (t[i + 1][j] >= t[i][j + 1]) out.push("-" + a[i++]);
      else out.push("+" + b[j++]);
    }
    while (i < m) out.push("-" + a[i++]);
    while (j < n) out.push("+" + b[j++]);
    return out.join("\n");
  }

  let chosenVersion = null, followHead = true; // the diff follows the head until a version is chosen
  async function loadRoom() {
    const [room, doc, versions] = await Promise.all([api("GET", "/workspace/room"), api("GET", "/workspace/document"),
      api("GET", "/workspace/versions?limit=12")]);
    $("head").textContent = `v${room.head_version}`;
    $("document").textContent = doc.text;
    $("doc-meta").textContent = `version ${doc.version} · ${plural(lineCount(doc.text), "line")} · ${plural(room.participants, "participant")} · ${plural(room.sessions, "live session")}`;
    count($("versions-count"), versions.versions, versions, "version");
    if (followHead || chosenVersion === null || chosenVersion > room.head_version
      || !versions.versions.some((v) => v.number === chosenVersion)) chosenVersion = room.head_version;
    fill($("versions"), versions.versions, (v) => el("li", {},
      el("button", { type: "button", class: "linkish" + (v.number === chosenVersion ? " chosen" : ""), "aria-pressed": v.number === chosenVersion ? "true" : "false",
        onclick: () => { chosenVersion = v.number; followHead = v.number === room.head_version; loadRoom().catch((e) => flash(`diff failed: ${e.message}`, true)); } }, `v${v.number}`),
      " ", el("span", { class: "who", text: v.author || "room" }), " ", when(v.created_at), " ",
      el("span", { class: "muted", text: [v.source, v.summary].filter(Boolean).join(" · ") })), "no versions");
    const diff = chosenVersion > 1 ? await api("GET", `/workspace/diff?from=${chosenVersion - 1}&to=${chosenVersion}`)
      : { diff: "" };
    diffView($("version-diff"), chosenVersion > 1 ? diff.diff : `(version 1: the first text)`);
  }

  const baseTexts = new Map();
  async function baseText(number) {
    if (!baseTexts.has(number)) baseTexts.set(number, (await api("GET", `/workspace/versions/${number}`)).text);
    return baseTexts.get(number);
  }
  async function loadProposals() {
    const page = await api("GET", `/workspace/proposals?limit=${PAGE}`);
    const items = page.proposals.slice().sort((x, y) => (x.status === "open" ? 0 : 1) - (y.status === "open" ? 0 : 1)
      || (x.status === "open" ? 0 : Date.parse(y.created_at) - Date.parse(x.created_at)));
    const shown = items.filter((p) => p.status === "open").concat(items.filter((p) => p.status !== "open").slice(0, 5));
    const open = items.filter((p) => p.status === "open").length;
    $("proposals-count").textContent = `${open}${page.next_cursor ? "+" : ""} open · ${page.proposals.length}${page.next_cursor ? "+ (truncated)" : ""} in all`;
    const cards = await Promise.all(shown.map(async (p) => {
      const diff = el("pre", { class: "diff", tabindex: "0", "aria-label": `diff of proposal ${p.id}` });
      try {
        const base = (await baseText(p.base_version)).split("\n");
        const [start, end] = p.lines || [1, base.length];
        diffView(diff, lineDiff(base.slice(start - 1, end).join("\n"), p.text));
      } catch (e) { diffView(diff, p.text.split("\n").map((l) => "+" + l).join("\n")); }
      const actions = p.status === "open" ? el("div", { class: "actions" },
        el("button", { type: "button", class: "approve", onclick: () => decide(p, "approve") }, "Approve"),
        el("input", { type: "text", placeholder: "reason (optional)", "aria-label": `reason to reject ${p.id}`, id: `reason-${p.id}` }),
        el("button", { type: "button", class: "reject", onclick: () => decide(p, "reject") }, "Reject"))
        : el("div", { class: "muted", text: `${p.status}${p.decided_by ? " by " + p.decided_by : ""}${p.committed_version ? " → v" + p.committed_version : ""}${p.reason ? " · " + p.reason : ""}` });
      return el("article", { class: `card status-${p.status}` },
        el("div", { class: "card-head" }, el("span", { class: `badge ${p.status}`, text: p.status }), " ",
          el("strong", { text: p.summary || "(no summary)" }), " ",
          el("span", { class: "muted", text: `by ${p.author} on v${p.base_version}${p.lines ? (p.lines[0] === p.lines[1] ? ` line ${p.lines[0]}` : ` lines ${p.lines[0]}–${p.lines[1]}`) : ""}` }), " ", when(p.created_at)),
        diff, actions);
    }));
    $("proposals").replaceChildren(...(cards.length ? cards : [el("p", { class: "empty", text: "no proposals" })]));
  }
  async function decide(p, verb) {
    const reason = verb === "reject" ? ($(`reason-${p.id}`) || {}).value : undefined;
    try {
      await api("POST", `/workspace/proposals/${enc(p.id)}/${verb}`, reason ? { reason } : {});
      await Promise.all([loadProposals(), loadRoom()]);
      flash(`${verb === "approve" ? "approved" : "rejected"} ${p.id}`);
    } catch (e) { flash(`${verb} failed: ${e.message}`, true); }
  }

  let sessions = [];
  async function loadPeople() {
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
  async function loadLeases() {
    const page = await api("GET", `/workspace/leases?limit=${PAGE}`);
    count($("leases-count"), page.leases, page, "live lease");
    fill($("leases"), page.leases, (l) => el("li", {}, el("span", { class: "who", text: l.participant }), " holds ",
      el("span", { class: "mono", text: l.lines ? `lines ${l.lines[0]}–${l.lines[1]}` : "the document" }),
      " ", el("span", { class: "muted", text: regionText(l.region) }), " · expires ", when(l.expires_at)), "no live leases");
  }

  // The task's status where the handoff's does not settle it: an open or accepted handoff's task is
  // working or input_required (the assignee waits for the owner). The operator sees every task.
  const LIVE_HANDOFF = ["open", "accepted"];
  async function taskStatuses(handoffs) {
    const live = handoffs.filter((h) => LIVE_HANDOFF.includes(h.status));
    const found = await Promise.all(live.map((h) =>
      api("GET", `/workspace/task?task_id=${encodeURIComponent(h.task_id)}`).then((t) => [h.id, t.status], () => [h.id, null])));
    return new Map(found);
  }

  let handoffsGen = 0;  // a newer load started: an older one that ends later paints nothing
  async function loadHandoffs() {
    const gen = ++handoffsGen;
    const page = await api("GET", `/workspace/handoffs?limit=${PAGE}`);
    const items = page.handoffs.slice().reverse();
    const tasks = await taskStatuses(items);
    if (gen !== handoffsGen) return;
    count($("handoffs-count"), items, page, "handoff");
    fill($("handoffs"), items, (h) => {
      const task = tasks.get(h.id);
      return el("li", { "data-id": h.id }, el("span", { class: `badge ${h.status}`, text: h.status }), " ",
        el("strong", { text: h.summary }), " ", el("span", { class: "muted", text: `${h.owner ?? "?"} → ${h.assignee ?? "anyone"} · ` }),
        el("span", { class: "mono muted", title: `task ${h.task_id}`, text: `task ${h.task_id.slice(0, 12)}…` }),
        task ? el("span", { class: `badge task ${task}`, title: "the task's status", text: task.replace("_", " ") }) : null,
        " · ", when(h.updated_at));
    }, "no handoffs");
  }

  // -- refresh, keeping the last good data --------------------------------------------
  const loaders = { room: loadRoom, proposals: loadProposals, people: loadPeople, leases: loadLeases, handoffs: loadHandoffs };
  const failed = (name) => (e) => { document.body.dataset[`stale${name}`] = e.message; throw e; };
  async function refreshAll(manual) {
    if (manual) { $("refresh-state").textContent = "refreshing…"; $("refresh").disabled = true; }
    const results = await Promise.allSettled(Object.entries(loaders).map(([n, f]) => f().catch(failed(n))));
    if (board.sid && manual) { if (board.healthy) board.refresh().catch(() => {}); else restartBoard(); loadSummaries(board.sid); }
    const bad = results.filter((r) => r.status === "rejected");
    if (manual) {
      $("refresh").disabled = false;
      $("refresh-state").textContent = bad.length ? `refresh failed: ${bad[0].reason.message} (showing the last good data)`
        : `refreshed ${new Date().toLocaleTimeString()}`;
      $("refresh-state").className = bad.length ? "bad" : "good";
    }
    return bad.length === 0;
  }
  const pending = new Map();
  function schedule(name) {
    if (pending.has(name)) return;
    pending.set(name, setTimeout(() => { pending.delete(name); loaders[name]().catch(() => {}); }, 120));
  }
  function flash(text, bad) { $("refresh-state").textContent = text; $("refresh-state").className = bad ? "bad" : "good"; }

  // -- the room's events (EventSource with the cookie), reconnecting with a bounded backoff ---------
  const ROUTES = [["version.", ["room", "proposals"]], ["document.", ["room"]], ["proposal.", ["proposals", "room"]],
    ["lease.", ["leases"]], ["handoff.", ["handoffs"]], ["participant.", ["people"]], ["session.", ["people"]],
    ["invitation.", []], ["board.", ["people"]]];
  const TYPES = ["invitation.created", "invitation.revoked", "participant.joined", "session.opened", "session.revoked",
    "version.committed", "document.external_edit", "document.external_edit_rejected", "lease.acquired", "lease.renewed",
    "lease.released", "lease.expired", "proposal.created", "proposal.approved", "proposal.rejected", "proposal.withdrawn",
    "handoff.created", "handoff.accepted", "handoff.input_requested", "handoff.input_received", "handoff.completed",
    "handoff.approved", "handoff.rejected", "handoff.cancelled", "board.message_posted", "board.message_resolved"];
  let source = null, liveBackoff = 1000, everOpen = false;
  function live(state, text) { $("live").className = `pill ${state}`; $("live").textContent = text; }
  function connect() {
    source = new EventSource("/workspace/observe");
    source.addEventListener("open", () => {
      live("good", "live"); liveBackoff = 1000;
      if (everOpen) refreshAll(false); // events may have been missed while away
      everOpen = true;
    });
    const onEvent = (ev) => {
      for (const [prefix, names] of ROUTES) if (ev.type.startsWith(prefix)) names.forEach(schedule);
      $("live").title = `last event ${ev.lastEventId} at ${new Date().toLocaleTimeString()}`;
    };
    TYPES.forEach((t) => source.addEventListener(t, onEvent));
    source.addEventListener("resync", () => { source.close(); refreshAll(false); reconnect(0); });
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) reconnect(liveBackoff);
      else live("warn", "reconnecting…");
    });
  }
  function reconnect(delay) {
    if (source) source.close();
    if (signedOut) return;
    // the stream cannot say why it failed: ask the room once, so an ended login stops the retries
    api("GET", "/workspace/room", undefined, true).catch(() => {});
    live("bad", `disconnected: retrying in ${Math.round(delay / 1000)}s`);
    liveBackoff = Math.min(liveBackoff * 2, 30000);
    setTimeout(() => { if (!signedOut) connect(); }, delay);
  }

  // -- the login ended (the cookie is gone or expired): say so and how to get a new one; stop every loop --------
  let signedOut = false;
  function loginEnded() {
    if (signedOut) return;
    signedOut = true;
    if (source) source.close();
    board.gen += 1; // ends the board's long-poll loop
    live("bad", "signed out");
    const file = $("login-ended").dataset.file;
    $("login-command").textContent = `ce console ${file}`;
    $("login-ended").hidden = false;
    $("refresh").disabled = true;
  }

  // -- the board: baseline, retained snapshot, long-poll deltas merged by message id ---------------
  const board = { sid: null, gen: 0, healthy: false, messages: new Map(), refresh: async () => {} };
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
  function restartBoard() {
    board.gen += 1; board.healthy = false;
    if (board.sid) boardLoop(board.gen, board.sid);
  }
  board.refresh = async () => { const snap = await snapshot(board.sid); merge([...snap.all.values()]); };
  function choose(sid) {
    board.sid = sid; board.messages = new Map(); board.truncated = false; renderBoard(); loadSummaries(sid);
    $("compose-send").disabled = !sid; restartBoard();
    if (!$("session-list").querySelector(`[data-sid="${CSS.escape(sid)}"]`)) $("session-search").value = "";
    renderPicker();
    $("board-sid").textContent = sid;
  }
  function renderBoard() {
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
      el("p", { class: "body", text: m.body }))) : [el("li", { class: "empty", text: board.sid ? "no retained messages" : "choose a session to see its board" })]));
    const n = items.length;
    $("board").dataset.count = String(n);
    $("board-count").textContent = board.sid ? `${n}${board.truncated ? "+ (truncated)" : ""} retained message${n === 1 ? "" : "s"}` : "";
  }
  // The picker: one entry per live session (its whole text wraps, never cut), the chosen one marked.
  function renderPicker() {
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
  function pickerKeys(ev) {
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
  async function loadSummaries(sid) {
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

  // -- the Human Join composer: post_session_message as the operator ------------------------
  async function post(ev) {
    ev.preventDefault();
    const body = $("compose-body").value;
    if (!board.sid || !body.trim()) { $("compose-state").textContent = board.sid ? "write something first" : "choose a session first"; return; }
    $("compose-send").disabled = true; $("compose-state").textContent = "posting…";
    try {
      const m = await api("POST", `/workspace/boards/${enc(board.sid)}/messages`, { kind: $("compose-kind").value,
        priority: $("compose-priority").value, requires_ack: $("compose-ack").checked, body });
      merge([m]); $("compose-body").value = ""; $("compose-state").textContent = `posted ${m.kind} ${m.message_id}`;
    } catch (e) { $("compose-state").textContent = `not posted: ${e.message}`; }
    finally { $("compose-send").disabled = !board.sid; }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("refresh").addEventListener("click", () => refreshAll(true));
    $("session-search").addEventListener("input", renderPicker);
    $("session-list").addEventListener("keydown", pickerKeys);
    $("composer").addEventListener("submit", post);
    $("compose-body").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) post(ev); });
    renderBoard();
    refreshAll(false).then((ok) => { if (!ok) flash("some panels failed to load: press Refresh", true); });
    connect();
    setInterval(tickTimes, 15000);
  });
})();
