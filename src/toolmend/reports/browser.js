// toolmend report: the sample browser. Plain JS, no network; reads the JSON in #tm-data.
// Every run value is inserted with textContent, never as HTML.
(function () {
  "use strict";
  // Large runs are embedded gzipped (base64); the browser inflates them itself.
  function load() {
    var node = document.getElementById("tm-data");
    if (node.type === "application/json") return Promise.resolve(JSON.parse(node.textContent));
    var bin = atob(node.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  load().then(start, function (err) {
    document.getElementById("tm-notes").textContent = "the sample data could not be read: " + err;
  });
  function start(D) {
  var P = D.pool, S = D.samples, R = D.runs, PAGE = 50;
  var state = { q: "", sort: "id", page: 0, f: {}, run: 0 };
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function pct(v) { return v === null || v === undefined ? "–" : v.toFixed(1); }

  // Facets: values of each filter over all samples.
  function codesOf(s) {
    var out = {};
    s.r.forEach(function (e) { if (e) e.f.forEach(function (f) { out[f[0]] = 1; }); });
    return Object.keys(out);
  }
  function decisionsOf(s) {
    var out = {};
    s.r.forEach(function (e) {
      if (e && e.e) e.e.forEach(function (ev) {
        var a = ev.action || ev.decision || ev.kind;
        if (a) out[String(a)] = 1;
      });
    });
    return Object.keys(out);
  }
  function changed(s) {
    var seen = null, diff = false;
    s.r.forEach(function (e) {
      if (!e || e.s === null) return;
      var ok = e.s >= 100 - 1e-9;
      if (seen === null) seen = ok; else if (seen !== ok) diff = true;
    });
    return diff;
  }
  function failed(s) { return s.r.some(function (e) { return e && e.x; }); }
  // A sample's facet values: its own (category …) and those of each run's answer (error type …).
  function facets(s) {
    var out = {};
    Object.keys(s.g).forEach(function (k) { out[k] = [s.g[k]]; });
    s.r.forEach(function (e) {
      if (e && e.g) Object.keys(e.g).forEach(function (k) {
        (out[k] = out[k] || []).indexOf(e.g[k]) < 0 && out[k].push(e.g[k]);
      });
    });
    return out;
  }
  S.forEach(function (s) {
    s._g = facets(s); s._codes = codesOf(s); s._dec = decisionsOf(s); s._chg = changed(s); s._err = failed(s);
    var texts = [s.id];
    s.r.forEach(function (e) { if (e) e.o.forEach(function (i) { texts.push(P[i]); }); });
    s._text = texts.join("\n").toLowerCase();
  });
  var FACETS = [["category", "category"], ["error_type", "error type"]];
  Object.keys(S.reduce(function (acc, s) { Object.keys(s._g).forEach(function (k) { acc[k] = 1; }); return acc; }, {}))
    .forEach(function (k) { if (k !== "category" && k !== "error_type") FACETS.push([k, k.replace(/_/g, " ")]); });

  function options(select, values) {
    var all = el("option", null, "all"); all.value = ""; select.appendChild(all);
    values.sort().forEach(function (v) { var o = el("option", null, v); o.value = v; select.appendChild(o); });
  }
  function facetValues(fn) {
    var out = {};
    S.forEach(function (s) { fn(s).forEach(function (v) { out[v] = 1; }); });
    return Object.keys(out);
  }
  function addFilter(key, label, values) {
    if (!values.length) return;
    var wrap = el("label", "tm-filter", label + " ");
    var sel = el("select"); sel.id = "tm-filter-" + key;
    options(sel, values);
    sel.addEventListener("change", function () { state.f[key] = sel.value; state.page = 0; render(); });
    wrap.appendChild(sel); $("tm-filters").appendChild(wrap);
  }
  FACETS.forEach(function (f) {
    addFilter(f[0], f[1], facetValues(function (s) { return s._g[f[0]] || []; }));
  });
  addFilter("code", "finding code", facetValues(function (s) { return s._codes; }));
  addFilter("decision", "decision", facetValues(function (s) { return s._dec; }));
  addFilter("score", "score", ["100", "below 100", "0"]);
  if (S.some(function (s) { return s._err; })) addFilter("infra", "infra error", ["yes", "no"]);
  if (R.length > 1) addFilter("changed", "changed between runs", ["yes", "no"]);

  function matches(s) {
    var f = state.f, e = s.r[state.run];
    for (var i = 0; i < FACETS.length; i++) {
      var k = FACETS[i][0];
      if (f[k] && (s._g[k] || []).indexOf(f[k]) < 0) return false;
    }
    if (f.code && s._codes.indexOf(f.code) < 0) return false;
    if (f.decision && s._dec.indexOf(f.decision) < 0) return false;
    if (f.infra && (f.infra === "yes") !== s._err) return false;
    if (f.changed && (f.changed === "yes") !== s._chg) return false;
    if (f.score) {
      if (!e || e.s === null) return false;
      if (f.score === "100" && e.s < 100) return false;
      if (f.score === "below 100" && e.s >= 100) return false;
      if (f.score === "0" && e.s !== 0) return false;
    }
    return !state.q || s._text.indexOf(state.q) >= 0;
  }
  function scoreOf(s) { var e = s.r[state.run]; return e && e.s !== null ? e.s : -1; }
  function delta(s) {
    var a = s.r[0], b = s.r[s.r.length - 1];
    return a && b && a.s !== null && b.s !== null ? b.s - a.s : 0;
  }
  function sorted(list) {
    var k = state.sort;
    if (k === "id") return list;
    var key = k.indexOf("delta") === 0 ? delta : scoreOf, sign = /desc$/.test(k) ? -1 : 1;
    return list.slice().sort(function (x, y) { return sign * (key(x) - key(y)); });
  }

  function render() {
    var list = sorted(S.filter(matches));
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    var body = $("tm-list");
    body.textContent = "";
    list.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (s) {
      var tr = el("tr", "tm-row"); tr.dataset.id = s.id;
      tr.appendChild(el("td", null, s.id));
      if (SHOW.category) tr.appendChild(el("td", null, s.g.category || ""));
      if (SHOW.etype) tr.appendChild(el("td", null, errorTypes(s).join(", ")));
      s.r.forEach(function (e) {
        tr.appendChild(el("td", "num tm-score", e ? (e.x ? "error" : pct(e.s)) : ""));
      });
      if (SHOW.flags) tr.appendChild(el("td", null, flagsOf(s)));
      tr.addEventListener("click", function () { show(s); });
      body.appendChild(tr);
    });
    $("tm-count").textContent = list.length + " of " + S.length + " samples · page " + (state.page + 1) + " of " + pages;
  }

  function pre(text, cls) { return el("pre", cls, text); }
  function section(parent, title, node) {
    var h = el("h4", null, title); parent.appendChild(h); parent.appendChild(node);
  }
  function callsText(calls) {
    return calls.map(function (c) { return c[0] + "(" + c[1] + ")"; }).join("\n");
  }
  function message(m) {
    var box = el("div", "tm-msg tm-" + m[0]);
    box.appendChild(el("div", "tm-role", m[0] + (m[3] ? " · " + m[3] : "")));
    if (P[m[1]]) box.appendChild(pre(P[m[1]]));
    if (m[2].length) box.appendChild(pre(callsText(m[2]), "tm-calls"));
    return box;
  }
  function runColumn(s, i) {
    var e = s.r[i], col = el("div", "tm-run");
    col.appendChild(el("h3", null, R[i].label));
    if (!e) { col.appendChild(el("p", "facts", "not in this run")); return col; }
    if (e.x) col.appendChild(el("p", "warn", "infrastructure error: " + e.x));
    col.appendChild(el("p", "tm-headline", R[i].primary + " " + pct(e.s)));
    if (e.g) col.appendChild(el("p", "facts", Object.keys(e.g).map(function (k) { return k + ": " + e.g[k]; }).join(" · ")));
    var tr = el("div", "tm-transcript");
    e.o.forEach(function (o, k) {
      if (k > 0 && s.fb) tr.appendChild(message(s.fb));
      tr.appendChild(message(["assistant", o, k === e.o.length - 1 ? e.c : [], e.o.length > 1 ? "turn " + (k + 1) : ""]));
    });
    if (!e.o.length && e.c.length) tr.appendChild(message(["assistant", -1, e.c, ""]));
    col.appendChild(tr);
    if (e.why !== undefined) section(col, "scorer's reason", pre(P[e.why], "tm-why"));
    var metrics = Object.keys(e.v).map(function (k) { return k + " " + pct(e.v[k]); }).join(" · ");
    if (metrics) section(col, "metrics (0–100)", el("p", "facts", metrics));
    if (e.f.length) section(col, "findings", pre(e.f.map(function (f) { return f[0] + ": " + f[1]; }).join("\n")));
    if (e.e && e.e.length) {
      var tbl = el("table", "tm-events"), keys = {};
      e.e.forEach(function (ev) { Object.keys(ev).forEach(function (k) { keys[k] = 1; }); });
      keys = Object.keys(keys);
      var hr = el("tr"); keys.forEach(function (k) { hr.appendChild(el("th", null, k)); }); tbl.appendChild(hr);
      e.e.forEach(function (ev) {
        var r = el("tr");
        keys.forEach(function (k) {
          var v = ev[k]; r.appendChild(el("td", null, v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : v));
        });
        tbl.appendChild(r);
      });
      section(col, "strategy decisions", tbl);
    }
    if (e.d !== undefined) section(col, "details", pre(P[e.d]));
    var u = e.u;
    col.appendChild(el("p", "facts", "tokens " + u[0] + "+" + u[1] + " · requests " + u[2] + " · retries " + u[3] +
      " · cache hits " + u[4] + " · latency " + u[5].toFixed(2) + " s"));
    return col;
  }
  function show(s) {
    var d = $("tm-detail");
    d.textContent = "";
    d.appendChild(el("h3", null, s.id));
    var g = Object.keys(s._g).map(function (k) { return k + ": " + s._g[k].join(", "); }).join(" · ");
    if (g) d.appendChild(el("p", "facts", g));
    if (s.p) {
      var prompt = el("div", "tm-transcript tm-prompt");
      s.p.forEach(function (m) { prompt.appendChild(message(m)); });
      section(d, "prompt", prompt);
    }
    if (s.t !== undefined) {
      var det = el("details"); det.appendChild(el("summary", null, "offered tools"));
      det.appendChild(pre(P[s.t])); d.appendChild(det);
    }
    if (s.gold) section(d, "gold answer", pre(s.gold.map(function (i) { return P[i]; }).join("\n---\n"), "tm-gold"));
    var cols = el("div", "tm-cols");
    s.r.forEach(function (e, i) { cols.appendChild(runColumn(s, i)); });
    d.appendChild(cols);
    if (location.hash !== "#sample=" + encodeURIComponent(s.id)) history.replaceState(null, "", "#sample=" + encodeURIComponent(s.id));
    d.scrollIntoView();
  }
  function fromHash() {
    var m = /^#sample=(.*)$/.exec(location.hash);
    if (!m) return;
    var id = m[1];
    try { id = decodeURIComponent(id); } catch (err) { /* an id with a bare "%": use it as it is */ }
    for (var i = 0; i < S.length; i++) if (S[i].id === id) { show(S[i]); return; }
  }

  // A column no sample fills is left out (a run with no categories, no findings).
  function errorTypes(s) { return (s._g.error_type || []).filter(function (x) { return x !== "none"; }); }
  function flagsOf(s) { return (s._chg ? "changed " : "") + s._codes.join(" "); }
  var SHOW = {
    category: S.some(function (s) { return !!s.g.category; }),
    etype: S.some(function (s) { return errorTypes(s).length > 0; }),
    flags: S.some(function (s) { return flagsOf(s) !== ""; })
  };
  var head = $("tm-head");
  [["category", "tm-h-category"], ["etype", "tm-h-etype"], ["flags", "tm-h-flags"]].forEach(function (c) {
    if (!SHOW[c[0]]) head.removeChild($(c[1]));
  });
  var runsBefore = SHOW.flags ? $("tm-h-flags") : null;
  R.forEach(function (r) { head.insertBefore(el("th", "num", r.label), runsBefore); });
  $("tm-search").addEventListener("input", function (ev) { state.q = ev.target.value.toLowerCase(); state.page = 0; render(); });
  var sortSel = $("tm-sort");
  [["id", "id"], ["score-asc", "score ↑"], ["score-desc", "score ↓"]].concat(R.length > 1 ? [["delta-asc", "Δ (last − first) ↑"], ["delta-desc", "Δ ↓"]] : [])
    .forEach(function (o) { var op = el("option", null, o[1]); op.value = o[0]; sortSel.appendChild(op); });
  sortSel.addEventListener("change", function () { state.sort = sortSel.value; state.page = 0; render(); });
  var runSel = $("tm-run");
  R.forEach(function (r, i) { var op = el("option", null, r.label); op.value = String(i); runSel.appendChild(op); });
  runSel.addEventListener("change", function () { state.run = +runSel.value; render(); });
  $("tm-prev").addEventListener("click", function () { state.page = Math.max(0, state.page - 1); render(); });
  $("tm-next").addEventListener("click", function () { state.page += 1; render(); });
  D.notes.forEach(function (n) { $("tm-notes").appendChild(el("p", "facts", n)); });
  window.addEventListener("hashchange", fromHash);
  render();
  fromHash();
  // Since navigation start: parsing the page and its data included.
  window.tmOpenMs = performance.now();
  document.body.dataset.tmReady = "1";
  }
})();
