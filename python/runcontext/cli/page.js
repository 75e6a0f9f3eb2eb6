"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const R = D.runs, N = R.length, PAGE = D.runsPerPage, SVG = "http://www.w3.org/2000/svg";
const PARTS = ["head", "conversation", "tail", "tools"];
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  for (const kid of kids) e.append(kid);
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}
function text(tag, value, cls) {
  const e = el(tag, cls ? {class: cls} : {});
  e.textContent = value;
  return e;
}
const fmt = (n) => n.toLocaleString("en");
const time = (t) => t.slice(0, 10) + " " + t.slice(11, 19) + "Z";
const short = (d) => d.slice(0, 19) + "…";
const told = (r) => { for (const [f, v] of D.factSets[r[4]]) if (D.factNames[f] === "date") return D.values[v]; return null; };
const total = (t) => t ? PARTS.reduce((s, p) => s + t[p], 0) : 0;
const share = (t) => t && t.billed && t.billed.input ? t.billed.cache_read / t.billed.input : null;
const maxTotal = R.reduce((m, r) => Math.max(m, total(r[3])), 0);
const plural = (n, w) => fmt(n) + " " + w + (n === 1 ? "" : "s");

// --- header ----------------------------------------------------------------------------------
document.getElementById("name").textContent = D.name;
document.getElementById("summary").textContent = N
  ? plural(N, "run") + ", recorded " + time(R[0][0]) + " to " + time(R[N - 1][0]) +
    "; " + plural(D.messages.length, "message") + "; chain " + (D.chain || "none (version 1: unchained)")
  : "No runs recorded.";
document.getElementById("notice").textContent =
  "Section texts, fact values and messages are shown redacted, by the rules runcontext show " +
  "applies (" + plural(D.redactions, "secret") + " replaced with [redacted]); invisible and " +
  "control characters are shown as escapes. Sizes and digests are of the text as sent.";

// --- overview: every run's tokens by part, cache share and changes, in at most 600 columns ----
function overview() {
  const host = document.getElementById("overview");
  if (!N) return;
  const W = 1200, H = 90, cols = Math.min(N, 600), per = N / cols, w = W / cols;
  const s = svg("svg", {viewBox: "0 0 " + W + " " + (H + 16), width: "100%", role: "img",
    "aria-label": "tokens by part per run"});
  for (let c = 0; c < cols; c++) {
    const a = Math.floor(c * per), b = Math.max(a + 1, Math.floor((c + 1) * per));
    const sums = [0, 0, 0, 0]; let changed = false, cache = 0, cached = 0;
    for (let i = a; i < b; i++) {
      const t = R[i][3];
      if (t) PARTS.forEach((p, k) => sums[k] += t[p]);
      if (R[i][6].length) changed = true;
      const sh = share(t); if (sh !== null) { cache += sh; cached++; }
    }
    let y = H;
    sums.forEach((v, k) => {
      const h = maxTotal ? v / (b - a) / maxTotal * (H - 8) : 0;
      if (h > 0) { y -= h; s.append(svg("rect", {x: c * w, y: y, width: Math.max(w - 0.5, 0.5), height: h, class: "bar" + k})); }
    });
    if (cached) s.append(svg("rect", {x: c * w, y: H - (cache / cached) * (H - 8) - 1, width: Math.max(w, 1), height: 2, class: "barc"}));
    if (changed) s.append(svg("rect", {x: c * w, y: H + 2, width: Math.max(w - 0.5, 1), height: 5, class: "tick"}));
    const hit = svg("rect", {x: c * w, y: 0, width: w, height: H + 8, fill: "transparent"});
    const title = svg("title", {}); title.textContent = "runs " + (a + 1) + "–" + b; hit.append(title);
    hit.addEventListener("click", () => show(Math.floor(a / PAGE), a + 1));
    s.append(hit);
  }
  const label = svg("text", {x: 0, y: H + 15, class: "axis"}); label.textContent = "run 1";
  const end = svg("text", {x: W, y: H + 15, class: "axis", "text-anchor": "end"}); end.textContent = "run " + fmt(N);
  const top = svg("text", {x: 2, y: 9, class: "axis"}); top.textContent = fmt(maxTotal) + " tokens";
  s.append(label, end, top);
  host.append(s);
}

// --- the timeline, a page of runs at a time ------------------------------------------------------
let page = 0, opened = 0;
const pages = Math.max(1, Math.ceil(N / PAGE));
const events = new Map();
for (const e of D.events) { if (!events.has(e.run)) events.set(e.run, []); events.get(e.run).push(e); }
function tokenBar(t) {
  const s = svg("svg", {width: 170, height: 14});
  s.append(svg("rect", {x: 0, y: 3, width: 170, height: 8, class: "track"}));
  let x = 0;
  PARTS.forEach((p, k) => {
    const w = maxTotal ? t[p] / maxTotal * 170 : 0;
    if (w > 0) { s.append(svg("rect", {x: x, y: 3, width: w, height: 8, class: "bar" + k})); x += w; }
  });
  const title = svg("title", {});
  title.textContent = fmt(total(t)) + " tokens (" + t.quality + "): " + PARTS.map((p) => p + " " + fmt(t[p])).join(", ");
  s.append(title);
  return s;
}
function cacheBar(sh) {
  const s = svg("svg", {width: 50, height: 14});
  s.append(svg("rect", {x: 0, y: 3, width: 50, height: 8, class: "track"}));
  s.append(svg("rect", {x: 0, y: 3, width: 50 * sh, height: 8, class: "barc"}));
  return s;
}
function chips(r, n) {
  const td = el("td");
  if (!r[6].length) { td.append(text("span", n === 1 ? "(no context)" : "unchanged", "same")); }
  const prev = n > 1 ? R[n - 2] : null;
  for (const [kind, verb, name] of r[6]) {
    const label = kind === "f" ? D.factNames[name] : D.sectionNames[name];
    let value = "";
    if (kind === "f") {
      const now = factValue(r, name), was = prev ? factValue(prev, name) : null;
      value = verb === "a" ? ": " + now : verb === "r" ? ": " + was : ": " + was + " → " + now;
    }
    const word = {a: "added", r: "removed", c: "changed"}[verb];
    td.append(text("span", word + " " + (kind === "f" ? "fact " : "section ") + label + value, "chip iso " + verb));
  }
  for (const e of events.get(n) || []) td.append(text("span", e.kind + ": " + e.text, "chip iso c"));
  return td;
}
function factValue(r, f) { for (const [g, v] of D.factSets[r[4]]) if (g === f) return D.values[v]; return null; }
function row(n) {
  const r = R[n - 1], t = r[3], sh = share(t), d = told(r);
  const tr = el("tr", {class: "run", id: "run-" + n});
  tr.append(text("td", "run " + n, "nw"), text("td", time(r[0]), "mono nw"),
    text("td", d !== null && d !== r[0].slice(0, 10) ? d : "", "iso nw"),
    el("td", {class: "mono nw", title: r[1]}, short(r[1])), text("td", fmt(r[2]), "num"),
    t ? el("td", {}, tokenBar(t)) : text("td", "not counted", "same"),
    sh !== null ? el("td", {title: fmt(t.billed.cache_read) + " of " + fmt(t.billed.input) + " billed input tokens read from the cache"}, el("div", {class: "cell"}, cacheBar(sh), text("span", Math.round(sh * 100) + "%", "same"))) : text("td", "", ""),
    chips(r, n));
  tr.addEventListener("click", () => { opened = opened === n ? 0 : n; render(); });
  return tr;
}
function detail(n) {
  const r = R[n - 1], t = r[3], td = el("td", {colspan: 8});
  const facts = el("div", {class: "grid"});
  for (const [f, v] of D.factSets[r[4]]) facts.append(text("span", D.factNames[f], "iso"), text("pre", D.values[v], "iso"));
  const secs = el("div", {class: "grid"});
  for (const [s, k] of D.sectionSets[r[5]]) {
    const v = D.sections[s].versions[k];
    secs.append(text("span", D.sectionNames[s], "iso"), text("span", v.position + ", " + fmt(v.bytes) + " B, version " + (k + 1) + ", " + v.digest, "mono"));
  }
  td.append(text("h4", "Facts told"), facts.childNodes.length ? facts : text("p", "none", "same"),
    text("h4", "Sections"), secs.childNodes.length ? secs : text("p", "none", "same"));
  if (t) {
    let line = fmt(total(t)) + " tokens (" + t.quality + "): " + PARTS.map((p) => p + " " + fmt(t[p])).join(", ");
    if (t.limit !== undefined) line += "; limit " + fmt(t.limit);
    if (t.billed) line += "; billed " + fmt(t.billed.input) + " input (" + fmt(t.billed.cache_read) + " read from the cache, " + fmt(t.billed.cache_write) + " written to it)" + (t.billed.output !== undefined ? ", " + fmt(t.billed.output) + " output" : "");
    td.append(text("h4", "Tokens"), text("p", line));
  }
  const [off, from, count, fresh] = r[7], to = from + count;
  const why = fresh ? ": the conversation as sent after a compaction or elision" : ": new since the run before";
  td.append(text("h4", count > 0 ? "Messages " + from + "–" + (to - 1) + why + " (it was sent messages 0–" + (r[2] - 1) + ")" : "No new message since the run before"));
  for (let i = 0; i < count && off + i < D.messages.length; i++) {
    td.append(text("div", "message " + (from + i), "same"), text("pre", D.messages[off + i], "iso"));
  }
  return el("tr", {class: "detail"}, td);
}
function render() {
  const body = document.querySelector("#runs tbody");
  body.replaceChildren();
  const a = page * PAGE;
  for (let n = a + 1; n <= Math.min(N, a + PAGE); n++) {
    body.append(row(n));
    if (opened === n) { body.lastChild.classList.add("open"); body.append(detail(n)); }
  }
  document.getElementById("pageinfo").textContent = N
    ? "runs " + fmt(a + 1) + "–" + fmt(Math.min(N, a + PAGE)) + " of " + fmt(N) + " (page " + (page + 1) + " of " + pages + ")"
    : "no runs";
}
function show(p, n) {
  page = Math.max(0, Math.min(pages - 1, p));
  if (n) opened = n;
  render();
  if (n) document.getElementById("run-" + n).scrollIntoView({block: "center"});
}
document.getElementById("first").onclick = () => show(0);
document.getElementById("prev").onclick = () => show(page - 1);
document.getElementById("next").onclick = () => show(page + 1);
document.getElementById("last").onclick = () => show(pages - 1);
document.getElementById("gorun").onchange = (e) => {
  const n = Math.max(1, Math.min(N, parseInt(e.target.value, 10) || 1));
  if (N) show(Math.floor((n - 1) / PAGE), n);
};
document.getElementById("godate").onchange = (e) => {
  let lo = 0, hi = N;  // the first run recorded on or after the date
  while (lo < hi) { const m = (lo + hi) >> 1; if (R[m][0].slice(0, 10) < e.target.value) lo = m + 1; else hi = m; }
  if (lo < N) show(Math.floor(lo / PAGE), lo + 1);
};

// --- facts: each one's values as spans of runs, changes highlighted ---------------------------
const SHOWN_SPANS = 50;
function factStrip(spans) {
  const s = svg("svg", {viewBox: "0 0 1000 10", width: "100%", height: 10, preserveAspectRatio: "none"});
  s.append(svg("rect", {x: 0, y: 0, width: 1000, height: 10, class: "track"}));
  spans.forEach(([a, b], i) => s.append(svg("rect", {x: (a - 1) / N * 1000, y: 0, width: Math.max((b - a + 1) / N * 1000, 0.8), height: 10, class: i % 2 ? "bar2" : "bar0"})));
  return s;
}
function spanRows(table, spans, from, to) {
  for (let i = from; i < to; i++) {
    const [a, b, v] = spans[i];
    const prev = i ? spans[i - 1] : null;
    const changed = prev && prev[1] === a - 1;
    table.append(el("tr", {}, text("td", a === b ? "run " + a : "runs " + a + "–" + b), text("td", time(R[a - 1][0]), "mono"),
      el("td", changed ? {class: "changed"} : {}, text("pre", D.values[v], "iso")),
      text("td", changed ? "changed from run " + (a - 1) : prev ? "told again after runs without it" : "first told", "same")));
  }
}
function facts() {
  const host = document.getElementById("factlist");
  if (!D.facts.length) { host.append(text("p", "No run was told any fact.", "same")); return; }
  for (const f of D.facts) {
    const d = el("details", {});
    const changes = f.spans.length - 1;
    d.append(el("summary", {}, text("span", D.factNames[f.name], "iso"), text("span", "  " + plural(changes, "change") + "; last told: ", "same"), text("span", D.values[f.spans[changes][2]], "iso")));
    d.addEventListener("toggle", () => {
      if (!d.open || d.dataset.done) return;
      d.dataset.done = "1";
      const b = el("div", {class: "body"});
      b.append(el("div", {class: "strip"}, factStrip(f.spans)));
      const table = el("table", {class: "spans"}, el("tr", {}, text("th", "runs"), text("th", "from (UTC)"), text("th", "value"), text("th", "")));
      const shown = Math.min(SHOWN_SPANS, f.spans.length);
      spanRows(table, f.spans, 0, shown);
      b.append(table);
      if (shown < f.spans.length) {
        const more = text("button", "show all " + fmt(f.spans.length) + " spans", "more");
        more.onclick = () => { spanRows(table, f.spans, shown, f.spans.length); more.remove(); };
        b.append(more);
      }
      d.append(b);
    });
    host.append(d);
    if (D.facts.length <= 8) d.open = true;
  }
}

// --- sections: each one's versions, a diff from the one before -----------------------------------
function spansText(spans) {
  const parts = spans.slice(0, 6).map(([a, b]) => a === b ? "run " + a : "runs " + a + "–" + b);
  return parts.join(", ") + (spans.length > 6 ? " and " + (spans.length - 6) + " more spans" : "");
}
function diffView(lines) {
  const box = el("div", {class: "diff mono iso"});
  for (const line of lines) {
    const c = line[0] === "+" ? "add" : line[0] === "-" ? "del" : line[0] === "@" ? "hunk" : "";
    box.append(text("div", line || " ", c));
  }
  return box;
}
function versionBody(s, k) {
  const v = s.versions[k], b = el("div", {class: "body"});
  if (k === 0) { b.append(text("p", "First version: its text.", "same"), el("div", {class: "diff"}, text("pre", v.text, "iso"))); return b; }
  const was = s.versions[k - 1];
  if (was.position !== v.position) b.append(text("p", "Moved from the " + was.position + " to the " + v.position + ".", "same"));
  if (v.diff === null) b.append(text("p", "Too long to diff here (more than " + fmt(D.maxDiffLines) + " lines); the digests differ.", "same"));
  else if (!v.diff.length) b.append(text("p", was.digest === v.digest ? "Same text." : "No change in the shown text (a change the redaction hides).", "same"));
  else b.append(diffView(v.diff));
  const full = el("details", {}, text("summary", "full text of version " + (k + 1)));
  full.addEventListener("toggle", () => { if (full.open && full.childNodes.length === 1) full.append(el("div", {class: "body"}, text("pre", v.text, "iso"))); });
  b.append(full);
  return b;
}
function sections() {
  const host = document.getElementById("sectionlist");
  if (!D.sections.length) { host.append(text("p", "No run had a section.", "same")); return; }
  D.sections.forEach((s, i) => {
    const d = el("details", {id: "section-" + i, open: ""});
    const last = s.versions[s.versions.length - 1];
    d.append(el("summary", {}, text("span", D.sectionNames[s.name], "iso"), text("span", "  " + plural(s.versions.length, "version") + "; last: " + last.position + ", " + fmt(last.bytes) + " B, " + spansText(last.runs), "same")));
    const b = el("div", {class: "body"});
    for (let k = s.versions.length - 1; k >= 0; k--) {
      const v = s.versions[k];
      const vd = el("details", {}, el("summary", {}, text("span", "version " + (k + 1) + ": " + v.position + ", " + fmt(v.bytes) + " B, " + short(v.digest) + " — " + spansText(v.runs))));
      vd.addEventListener("toggle", () => { if (vd.open && vd.childNodes.length === 1) vd.append(versionBody(s, k)); });
      b.append(vd);
      if (k === s.versions.length - 1) vd.open = true;  // the latest change, shown at once
    }
    d.append(b);
    host.append(d);
  });
}

// --- compactions and elisions --------------------------------------------------------------------
function eventList() {
  const host = document.getElementById("eventlist");
  if (!D.events.length) {
    host.append(text("p", "None recorded: transcript format version " + D.version + " has no compaction or elision record. When it has, each is listed here and marked on its run in the timeline.", "same"));
    return;
  }
  const table = el("table", {}, el("tr", {}, text("th", "run"), text("th", "kind"), text("th", "what")));
  for (const e of D.events) table.append(el("tr", {}, text("td", "run " + e.run), text("td", e.kind), text("td", e.text, "iso")));
  host.append(table);
}

function fromHash() {
  const m = /^#run-(\d+)$/.exec(location.hash);
  if (m && +m[1] >= 1 && +m[1] <= N) show(Math.floor((+m[1] - 1) / PAGE), +m[1]);
}
overview(); render(); facts(); sections(); eventList(); fromHash();
window.addEventListener("hashchange", fromHash);
document.body.dataset.ready = "1";
