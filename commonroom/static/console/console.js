// The commonroom console: plain JavaScript, no build, no library.
// Everything from the room is rendered with textContent (never as HTML).
"use strict";
(() => {
  const { $, enc, el, plural, lineCount, shortId, sleep, relative, when, tickTimes, count, fill, diffView, lineDiff,
    numbered, lineSpan, overlaps } = window.CR;
  const PAGE = 200;

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
  // Every version, 12 a page, newest first: Older / Newer walk the cursors of versions_list. The chosen
  // version shows as its changes (the diff from the one before) or as its whole text, with line numbers.
  const pager = { cursors: [null], at: 0 };
  let head = 0, chosenVersion = null, followHead = true, versionView = "diff", behindTimer = null;
  async function loadRoom() {
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
  function page(step) {
    pager.at = Math.max(0, pager.at + step);
    loadRoom().catch((e) => flash(`versions failed: ${e.message}`, true));
  }
  function viewAs(kind) { versionView = kind; showVersion().catch((e) => flash(`version failed: ${e.message}`, true)); }

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
  async function loadProposals() {
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
  // A failed action says so in its own card (kept across repaints until that action succeeds).
  const errors = new Map();
  function cardError(key) {
    const text = errors.get(key);
    return text ? el("p", { class: "card-error", role: "alert", "data-error": key, text }) : null;
  }
  function actionFailed(key, verb, e) { errors.set(key, `${verb} failed: ${e.message}${e.code ? ` (${e.code})` : ""}`); }
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
  async function loadHandoffs() {
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
    ["lease.", ["leases", "proposals"]], ["handoff.", ["handoffs"]], ["participant.", ["people"]], ["session.", ["people"]],
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
    if (sid !== board.sid) { endReply(); endComplete(); }
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
      el("p", { class: "body", text: m.body }), messageActions(m))) : [el("li", { class: "empty", text: board.sid ? "no retained messages" : "choose a session to see its board" })]));
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
  function endReply() {
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
  function endComplete() { completing.message = null; $("complete-form").hidden = true; $("complete-answer").value = ""; }
  function newKey() {
    return "console-" + (window.crypto && crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);
  }
  async function complete(ev) {
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
  async function post(ev) {
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

  document.addEventListener("DOMContentLoaded", () => {
    $("refresh").addEventListener("click", () => refreshAll(true));
    $("session-search").addEventListener("input", renderPicker);
    $("session-list").addEventListener("keydown", pickerKeys);
    $("composer").addEventListener("submit", post);
    $("reply-cancel").addEventListener("click", endReply);
    $("complete-form").addEventListener("submit", complete);
    $("complete-cancel").addEventListener("click", endComplete);
    $("versions-older").addEventListener("click", () => page(1));
    $("versions-newer").addEventListener("click", () => page(-1));
    $("version-as-diff").addEventListener("click", () => viewAs("diff"));
    $("version-as-text").addEventListener("click", () => viewAs("text"));
    $("compose-body").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) post(ev); });
    renderBoard();
    refreshAll(false).then((ok) => { if (!ok) flash("some panels failed to load: press Refresh", true); });
    connect();
    setInterval(tickTimes, 15000);
  });
})();
