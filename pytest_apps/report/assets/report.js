(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("grid-data").textContent);
  var canvas = document.getElementById("grid"), wrap = document.getElementById("grid-wrap");
  var tip = document.getElementById("tip"), stats = document.getElementById("grid-stats");
  var rows = [], re = /([a-z])(\d*)/g, parts = D.rows.length ? D.rows.split(",") : [];
  for (var i = 0; i < parts.length; i++) {
    var row = [], m;
    re.lastIndex = 0;
    while ((m = re.exec(parts[i])) !== null) {
      var n = m[2] ? parseInt(m[2], 10) : 1;
      for (var k = 0; k < n; k++) row.push(m[1]);
    }
    rows.push(row);
  }
  var n = rows.length, maxT = Math.max(1, D.max_tests);
  var avail = Math.max(320, wrap.clientWidth - 24);
  var L, s, gap, cols, per, sizes = [16, 12, 10, 8, 6, 5, 4, 3, 2];
  function layout(size) {
    var lab = size >= 10 ? 84 : 0, g = size >= 6 ? 18 : 10;
    var bw = lab + maxT * size;
    // Columns only when there are many problems: a short list reads best as plain rows.
    var fit = Math.max(1, Math.floor((avail + g) / (bw + g)));
    var c = Math.max(1, Math.min(fit, Math.ceil(n / 40)));
    return {L: lab, s: size, gap: g, cols: c, per: Math.ceil(n / c), bw: bw};
  }
  var lay = null;
  for (var si = 0; si < sizes.length; si++) {
    lay = layout(sizes[si]);
    if (lay.per * lay.s <= 1400 && lay.bw <= avail) break;
  }
  L = lay.L; s = lay.s; gap = lay.gap; cols = lay.cols; per = Math.max(1, lay.per);
  var W = cols * lay.bw + (cols - 1) * gap, H = per * s;
  var dpr = window.devicePixelRatio || 1;
  if (H * dpr > 32000 || W * dpr > 32000 || W * H * dpr * dpr > 12e6) dpr = 1;
  canvas.width = Math.max(1, Math.round(W * dpr)); canvas.height = Math.max(1, Math.round(H * dpr));
  canvas.style.width = W + "px"; canvas.style.height = H + "px";
  var ctx = canvas.getContext("2d");
  var inner = s >= 4 ? s - 1 : s;
  function origin(p) { var c = Math.floor(p / per); return [c * (lay.bw + gap), (p - c * per) * s]; }
  // Cells go straight into one pixel buffer (fast for 100k+ cells), then the labels on top.
  var CW = canvas.width, CH = canvas.height, image = ctx.createImageData(CW, CH);
  var buf = new Uint32Array(image.data.buffer), colour = {};
  Object.keys(D.kinds).forEach(function (c) {
    var h = D.kinds[c][2];  // little-endian RGBA
    colour[c] = (0xff000000 | (parseInt(h.slice(5, 7), 16) << 16) | (parseInt(h.slice(3, 5), 16) << 8) |
      parseInt(h.slice(1, 3), 16)) >>> 0;
  });
  for (var p = 0; p < n; p++) {
    var o = origin(p), r = rows[p];
    var y0 = Math.round(o[1] * dpr), y1 = Math.min(CH, Math.round((o[1] + inner) * dpr));
    for (var t = 0; t < r.length; t++) {
      var x0 = Math.round((o[0] + L + t * s) * dpr), x1 = Math.min(CW, Math.round((o[0] + L + t * s + inner) * dpr));
      var col = colour[r[t]] || colour.x;
      for (var y = y0; y < y1; y++) buf.fill(col, y * CW + x0, y * CW + x1);
    }
  }
  ctx.putImageData(image, 0, 0);
  if (L) {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#1d2330";
    ctx.font = Math.min(12, s) + "px ui-monospace, Menlo, Consolas, monospace";
    ctx.textBaseline = "middle";
    for (var q0 = 0; q0 < n; q0++) {
      var ol = origin(q0), label = D.ids[q0].length > 11 ? D.ids[q0].slice(0, 10) + "\u2026" : D.ids[q0];
      ctx.fillText(label, ol[0], ol[1] + s / 2);
    }
  }
  // Read the canvas back: the colour at each cell's centre, counted per kind (checked by the tests).
  var drawn = {}, cells = 0;
  for (var q = 0; q < n; q++) cells += rows[q].length;
  if (canvas.width * canvas.height <= 16e6) {
    var img = ctx.getImageData(0, 0, canvas.width, canvas.height).data, byRgb = {};
    Object.keys(D.kinds).forEach(function (c) {
      var h = D.kinds[c][2];
      byRgb[parseInt(h.slice(1, 3), 16) + "," + parseInt(h.slice(3, 5), 16) + "," + parseInt(h.slice(5, 7), 16)] =
        D.kinds[c][0];
    });
    for (var a = 0; a < n; a++) {
      var oa = origin(a);
      for (var b = 0; b < rows[a].length; b++) {
        var x = Math.floor((oa[0] + L + b * s + inner / 2) * dpr), y = Math.floor((oa[1] + inner / 2) * dpr);
        var idx = (y * canvas.width + x) * 4;
        var kind = byRgb[img[idx] + "," + img[idx + 1] + "," + img[idx + 2]] || "unknown";
        drawn[kind] = (drawn[kind] || 0) + 1;
      }
    }
  }
  stats.setAttribute("data-drawn", JSON.stringify(drawn));
  stats.setAttribute("data-decoded-cells", String(cells));
  stats.setAttribute("data-cell-size", String(s));
  stats.setAttribute("data-columns", String(cols));
  function hit(ev) {
    var rect = canvas.getBoundingClientRect(), x = ev.clientX - rect.left, y = ev.clientY - rect.top;
    var c = Math.floor(x / (lay.bw + gap)), xo = x - c * (lay.bw + gap), rr = Math.floor(y / s);
    var p = c * per + rr;
    if (c < 0 || c >= cols || rr < 0 || rr >= per || p >= n || xo > lay.bw) return null;
    var t = xo < L ? -1 : Math.floor((xo - L) / s);
    return {p: p, t: t < rows[p].length ? t : -1};
  }
  canvas.addEventListener("mousemove", function (ev) {
    var h = hit(ev);
    if (!h) { tip.hidden = true; return; }
    var r = rows[h.p], passed = 0;
    for (var i = 0; i < r.length; i++) if (r[i] === "p") passed++;
    var text = D.ids[h.p] + " \u00b7 " + D.tiers[D.tier_of[h.p]] + " \u00b7 " + D.verdicts[h.p].replace("_", " ") +
      " (" + passed + "/" + r.length + ")";
    if (h.t >= 0) text += " \u00b7 test " + h.t + ": " + (D.kinds[r[h.t]] || D.kinds.x)[1];
    tip.textContent = text;
    tip.hidden = false;
    var wr = wrap.getBoundingClientRect();
    tip.style.left = (ev.clientX - wr.left + wrap.scrollLeft + 14) + "px";
    tip.style.top = (ev.clientY - wr.top + wrap.scrollTop + 12) + "px";
  });
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
  canvas.addEventListener("click", function (ev) {
    var h = hit(ev);
    if (!h) return;
    var el = document.getElementById("p-" + D.ids[h.p]);
    if (el) { el.open = true; el.scrollIntoView({behavior: "smooth", block: "start"}); }
  });
  // Filters over the failing problems.
  var fid = document.getElementById("f-id"), fkind = document.getElementById("f-kind");
  var items = document.querySelectorAll("details.fail"), count = document.getElementById("fail-count");
  function filter() {
    var q = fid.value.trim().toLowerCase(), k = fkind.value, shown = 0;
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var ok = (!q || el.getAttribute("data-id").toLowerCase().indexOf(q) >= 0) &&
        (!k || el.getAttribute("data-kind") === k);
      el.hidden = !ok;
      if (ok) shown++;
    }
    count.textContent = shown === items.length ? String(shown) : shown + " of " + items.length;
  }
  if (fid) {
    fid.addEventListener("input", filter);
    fkind.addEventListener("change", filter);
    document.getElementById("f-open").addEventListener("click", function () {
      for (var i = 0; i < items.length; i++) if (!items[i].hidden) items[i].open = true;
    });
    document.getElementById("f-close").addEventListener("click", function () {
      for (var i = 0; i < items.length; i++) items[i].open = false;
    });
  }
  document.documentElement.setAttribute("data-rendered", "1");
  // Milliseconds from navigation to a drawn grid (the tests report it for the full test split).
  document.documentElement.setAttribute("data-ready-ms", String(Math.round(performance.now())));
})();
