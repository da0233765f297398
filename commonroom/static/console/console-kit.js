// The console's small helpers, shared by its scripts (window.CR): elements, times, lists, diffs.
// Everything from the room is rendered with textContent (never as HTML).
"use strict";
window.CR = (() => {
  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;
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

  // The text with a line number before each line (the numbers are CSS, so copying the text copies the text).
  function numbered(node, text) {
    const lines = text === "" ? [] : text.replace(/\n$/, "").split("\n");
    node.classList.add("numbered");
    node.replaceChildren(...lines.map((line, i) => el("span", { "data-n": String(i + 1), text: line + "\n" })));
  }
  const lineSpan = (lines) => (!lines ? "the document" : lines[0] === lines[1] ? `line ${lines[0]}` : `lines ${lines[0]}–${lines[1]}`);
  const overlaps = (a, b) => Boolean(a && b) && a[0] <= b[1] && b[0] <= a[1];
  return { $, enc, el, plural, lineCount, shortId, sleep, relative, when, tickTimes, count, fill, diffView, lineDiff,
    numbered, lineSpan, overlaps };
})();
