// beamlab report: draws the charts of the HTML report (beamlab_report_html)
// from the JSON model embedded in <script id="beamlab-data">. Vanilla
// JavaScript, no library, no network: every chart is inline SVG (the
// scheduler heatmap a canvas); long series are reduced to the first, min,
// max and last point of each pixel column. Progress is recorded on <body>
// for the browser test: data-charts-rendered (charts drawn) and
// data-errors (every error caught, also through window.onerror).
// The page inlines this file in a <script> element: it must never contain
// the characters that would close one.
(function () {
  'use strict';
  var errors = [];
  var rendered = 0;
  function noteError(msg) {
    errors.push(String(msg));
    document.body.setAttribute('data-errors', errors.join(' | '));
  }
  window.onerror = function (msg, src, line, col) {
    noteError(msg + ' (line ' + line + ':' + col + ')');
  };
  var SVGNS = 'http://www.w3.org/2000/svg';
  var COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#be185d', '#4d7c0f'];
  var PM = String.fromCharCode(177);

  function h(tag, attrs, kids) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    (kids || []).forEach(function (k) {
      if (k === null || k === undefined) return;
      e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
    });
    return e;
  }
  function s(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function setAttrs(e, attrs) {
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
  }
  function color(i) { return COLORS[i % COLORS.length]; }

  // Numbers with 4 significant digits (or P), SI prefixes from 10 000 up.
  function fmt(v, p) {
    if (v === null || v === undefined || isNaN(v)) return '-';
    p = p || 4;
    var a = Math.abs(v);
    if (a === 0) return '0';
    var units = [[1e12, 1e12, 'T'], [1e9, 1e9, 'G'], [1e6, 1e6, 'M'], [1e4, 1e3, 'k']];
    for (var i = 0; i < units.length; i++) {
      if (a >= units[i][0]) return prec(v / units[i][1], p) + units[i][2];
    }
    if (a >= 1e-3) return prec(v, p);
    return v.toExponential(2);
  }
  // toPrecision switches to exponents when the integer part is longer.
  function prec(v, p) {
    var digits = Math.floor(Math.log(Math.abs(v)) / Math.LN10) + 1;
    return digits >= p ? String(Math.round(v)) : trim(v.toPrecision(p));
  }
  // Tick labels need enough digits to tell neighbouring ticks apart.
  function fmtTick(t, step) {
    var a = Math.abs(t);
    var digits = a > 0 && step > 0 ? Math.ceil(Math.log(a / step) / Math.LN10) + 1 : 1;
    return fmt(t, Math.max(2, Math.min(12, digits + 1)));
  }
  function trim(str) {
    return str.indexOf('.') >= 0 && str.indexOf('e') < 0 ? str.replace(/0+$/, '').replace(/[.]$/, '') : str;
  }
  function pct(v) { return (v >= 0 ? '+' : '') + (100 * v).toFixed(1) + '%'; }

  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) { hi = lo + 1; }
    var span = hi - lo;
    var step = Math.pow(10, Math.floor(Math.log(span / count) / Math.LN10));
    var err = count / span * step;
    if (err <= 0.15) step *= 10; else if (err <= 0.35) step *= 5; else if (err <= 0.75) step *= 2;
    var ticks = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(t);
    return ticks;
  }
  function extent(arrays) {
    var lo = Infinity, hi = -Infinity;
    arrays.forEach(function (a) {
      for (var i = 0; i < a.length; i++) {
        var v = a[i];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    });
    if (lo === Infinity) return [0, 1];
    if (lo === hi) { var pad = lo === 0 ? 1 : Math.abs(lo) * 0.1; return [lo - pad, hi + pad]; }
    return [lo, hi];
  }

  // Keeps long series fast: per pixel column only the first, min, max and
  // last points survive, in their original order, so spikes stay visible.
  function downsample(xs, ys, x0, x1, cols) {
    if (xs.length <= cols * 4) return { x: xs, y: ys };
    var ox = [], oy = [];
    var span = (x1 - x0) || 1;
    var cur = -1, first = -1, minI = -1, maxI = -1, last = -1;
    function flush() {
      if (cur < 0) return;
      var idx = [first, minI, maxI, last].filter(function (v, i, a) { return a.indexOf(v) === i; });
      idx.sort(function (a, b) { return a - b; });
      idx.forEach(function (k) { ox.push(xs[k]); oy.push(ys[k]); });
    }
    for (var i = 0; i < xs.length; i++) {
      var c = Math.min(cols - 1, Math.floor((xs[i] - x0) / span * cols));
      if (c !== cur) { flush(); cur = c; first = minI = maxI = i; }
      if (ys[i] < ys[minI]) minI = i;
      if (ys[i] > ys[maxI]) maxI = i;
      last = i;
    }
    flush();
    return { x: ox, y: oy };
  }

  function frame(title, w, hgt) {
    var svg = s('svg', { 'class': 'chart', width: w, height: hgt, viewBox: '0 0 ' + w + ' ' + hgt, role: 'img' });
    svg.appendChild(s('title', {}, title));
    return svg;
  }
  function box(title, subtitle) {
    var d = h('figure', { 'class': 'card' }, [h('figcaption', {}, [title])]);
    if (subtitle) d.appendChild(h('div', { 'class': 'muted' }, [subtitle]));
    return d;
  }
  function legend(items) {
    return h('div', { 'class': 'legend' }, items.map(function (it) {
      return h('span', {}, [h('i', { style: 'background:' + it.color }), it.name]);
    }));
  }
  function done(card, svg) {
    card.appendChild(svg);
    rendered++;
  }

  // Generic line chart. opts: title, series [{name, color, x, y, dash}],
  // xLabel, yLabel, xTicks (optional [[value, label]]), xMap (optional
  // function to a linear axis), yFromZero.
  function lineChart(parent, opts) {
    // Gaps (null) in a series are skipped: the line joins its neighbours.
    opts.series = opts.series.map(function (sr) {
      var x = [], y = [];
      for (var i = 0; i < sr.y.length; i++) {
        if (typeof sr.y[i] === 'number' && typeof sr.x[i] === 'number') { x.push(sr.x[i]); y.push(sr.y[i]); }
      }
      return Object.assign({}, sr, { x: x, y: y });
    }).filter(function (sr) { return sr.x.length > 0; });
    if (!opts.series.length) return;
    var W = 560, H = 240, L = 58, R = 14, T = 12, B = 40;
    var pw = W - L - R, ph = H - T - B;
    var card = box(opts.title, opts.subtitle);
    var xm = opts.xMap || function (v) { return v; };
    var xsAll = opts.series.map(function (sr) { return sr.x.map(xm); });
    var xe = extent(xsAll);
    var ye = extent(opts.series.map(function (sr) { return sr.y; }));
    if (opts.yFromZero && ye[0] > 0) ye[0] = 0;
    var yt = niceTicks(ye[0], ye[1], 5);
    ye = [Math.min(ye[0], yt[0]), Math.max(ye[1], yt[yt.length - 1])];
    var X = function (v) { return L + (xm(v) - xe[0]) / (xe[1] - xe[0]) * pw; };
    var Y = function (v) { return T + ph - (v - ye[0]) / (ye[1] - ye[0]) * ph; };
    var svg = frame(opts.title, W, H);
    var ystep = yt.length > 1 ? yt[1] - yt[0] : 1;
    yt.forEach(function (t) {
      svg.appendChild(s('line', { x1: L, x2: L + pw, y1: Y(t), y2: Y(t), 'class': 'grid' }));
      svg.appendChild(s('text', { x: L - 6, y: Y(t) + 4, 'class': 'tick', 'text-anchor': 'end' }, fmtTick(t, ystep)));
    });
    var xt = opts.xTicks || (function () {
      var ts = niceTicks(xe[0], xe[1], 6), st = ts.length > 1 ? ts[1] - ts[0] : 1;
      return ts.map(function (t) { return [t, fmtTick(t, st)]; });
    })();
    xt.forEach(function (t) {
      var px = L + (opts.xTicks ? (xm(t[0]) - xe[0]) : (t[0] - xe[0])) / (xe[1] - xe[0]) * pw;
      if (px < L - 1 || px > L + pw + 1) return;
      svg.appendChild(s('line', { x1: px, x2: px, y1: T + ph, y2: T + ph + 4, 'class': 'axis' }));
      svg.appendChild(s('text', { x: px, y: T + ph + 16, 'class': 'tick', 'text-anchor': 'middle' }, t[1]));
    });
    svg.appendChild(s('rect', { x: L, y: T, width: pw, height: ph, 'class': 'plot' }));
    opts.series.forEach(function (sr) {
      var d = downsample(sr.x, sr.y, opts.xMap ? sr.x[0] : xe[0], opts.xMap ? sr.x[sr.x.length - 1] : xe[1], pw);
      var path = '';
      for (var i = 0; i < d.x.length; i++) {
        path += (i ? 'L' : 'M') + X(d.x[i]).toFixed(1) + ',' + Y(d.y[i]).toFixed(1);
      }
      var attrs = { d: path, fill: 'none', stroke: sr.color, 'stroke-width': 1.5 };
      if (sr.dash) attrs['stroke-dasharray'] = '5,4';
      svg.appendChild(s('path', attrs));
      if (sr.markers || d.x.length <= 3) {
        for (var j = 0; j < sr.x.length; j++) {
          svg.appendChild(s('circle', { cx: X(sr.x[j]), cy: Y(sr.y[j]), r: 3, fill: sr.color }));
        }
      }
    });
    if (opts.xLabel) svg.appendChild(s('text', { x: L + pw / 2, y: H - 4, 'class': 'label', 'text-anchor': 'middle' }, opts.xLabel));
    if (opts.yLabel) svg.appendChild(s('text', { x: 12, y: T + ph / 2, 'class': 'label', 'text-anchor': 'middle',
                                                 transform: 'rotate(-90 12 ' + (T + ph / 2) + ')' }, opts.yLabel));
    card.appendChild(legend(opts.series));
    done(card, svg);
    parent.appendChild(card);
  }

  // One benchmark across runs: a bar per run with its CI as error bar.
  function barChart(parent, name, items, unit, better) {
    var W = 460, rowH = 30, L = 70, R = 120, T = 8;
    var H = T + items.length * rowH + 26;
    var card = box(name, (unit ? unit + ', ' : '') + (better === 'higher' ? 'higher is better' : 'lower is better'));
    var vals = [];
    items.forEach(function (it) { vals.push(it.value); if (it.ci) { vals.push(it.ci[0], it.ci[1]); } });
    var e = extent([vals]);
    var lo = Math.min(0, e[0]), hi = Math.max(0, e[1]);
    var pw = W - L - R;
    var X = function (v) { return L + (v - lo) / ((hi - lo) || 1) * pw; };
    var svg = frame(name, W, H);
    var bt = niceTicks(lo, hi, 4), bstep = bt.length > 1 ? bt[1] - bt[0] : 1;
    bt.forEach(function (t) {
      svg.appendChild(s('line', { x1: X(t), x2: X(t), y1: T, y2: H - 22, 'class': 'grid' }));
      svg.appendChild(s('text', { x: X(t), y: H - 8, 'class': 'tick', 'text-anchor': 'middle' }, fmtTick(t, bstep)));
    });
    items.forEach(function (it, i) {
      var y = T + i * rowH;
      svg.appendChild(s('text', { x: L - 6, y: y + rowH / 2 + 4, 'class': 'tick', 'text-anchor': 'end' }, it.label));
      svg.appendChild(s('rect', { x: Math.min(X(0), X(it.value)), y: y + 5, width: Math.abs(X(it.value) - X(0)),
                                  height: rowH - 10, fill: it.color, 'fill-opacity': 0.75 }));
      if (it.ci) {
        var cy = y + rowH / 2;
        svg.appendChild(s('path', { d: 'M' + X(it.ci[0]) + ',' + (cy - 7) + 'v14M' + X(it.ci[0]) + ',' + cy + 'H' +
                                       X(it.ci[1]) + 'M' + X(it.ci[1]) + ',' + (cy - 7) + 'v14',
                                    stroke: '#111', 'stroke-width': 1.5, fill: 'none', 'class': 'errorbar' }));
      }
      svg.appendChild(s('text', { x: W - R + 6, y: y + rowH / 2 + 4, 'class': 'tick' },
                        fmt(it.value) + (it.ci ? ' ' + PM + fmt((it.ci[1] - it.ci[0]) / 2) : '')));
    });
    done(card, svg);
    parent.appendChild(card);
  }

  // Sample distributions of one benchmark across runs: histograms on common
  // bins, and a box plot (p5, p25, median, p75, p95) per run below.
  function distChart(parent, name, items) {
    var W = 420, L = 40, R = 14, T = 10, histH = 120, boxH = 22;
    var H = T + histH + items.length * boxH + 30;
    var pw = W - L - R;
    var e = extent(items.map(function (it) { return it.samples; }));
    var bins = Math.max(5, Math.min(40, Math.round(Math.sqrt(Math.max.apply(null, items.map(function (it) { return it.samples.length; }))))));
    var width = (e[1] - e[0]) / bins;
    var X = function (v) { return L + (v - e[0]) / (e[1] - e[0]) * pw; };
    var counts = items.map(function (it) {
      var c = new Array(bins).fill(0);
      it.samples.forEach(function (v) { c[Math.min(bins - 1, Math.floor((v - e[0]) / width))]++; });
      return c.map(function (k) { return k / it.samples.length; });
    });
    var maxC = Math.max.apply(null, counts.map(function (c) { return Math.max.apply(null, c); })) || 1;
    var card = box(name, 'sample distribution (share of samples per bin) and box: p5 p25 median p75 p95');
    var svg = frame(name + ' distribution', W, H);
    counts.forEach(function (c, k) {
      var path = 'M' + X(e[0]) + ',' + (T + histH);
      for (var i = 0; i < bins; i++) {
        var y = T + histH - c[i] / maxC * histH;
        path += 'L' + X(e[0] + i * width).toFixed(1) + ',' + y.toFixed(1) + 'L' + X(e[0] + (i + 1) * width).toFixed(1) + ',' + y.toFixed(1);
      }
      path += 'L' + X(e[1]) + ',' + (T + histH) + 'Z';
      svg.appendChild(s('path', { d: path, fill: items[k].color, 'fill-opacity': 0.25, stroke: items[k].color, 'class': 'hist' }));
    });
    items.forEach(function (it, k) {
      var st = it.stats, y = T + histH + 8 + k * boxH;
      if (st.p25 === undefined) return;
      var g = s('g', { stroke: it.color, fill: 'none', 'stroke-width': 1.5, 'class': 'box' });
      g.appendChild(s('path', { d: 'M' + X(st.p5) + ',' + (y + 8) + 'H' + X(st.p25) + 'M' + X(st.p75) + ',' + (y + 8) + 'H' + X(st.p95) }));
      g.appendChild(s('rect', { x: X(st.p25), y: y + 2, width: Math.max(1, X(st.p75) - X(st.p25)), height: 12, fill: it.color, 'fill-opacity': 0.2 }));
      g.appendChild(s('path', { d: 'M' + X(st.median) + ',' + (y + 1) + 'v14', 'stroke-width': 2.5 }));
      svg.appendChild(g);
    });
    var dt = niceTicks(e[0], e[1], 5), dstep = dt.length > 1 ? dt[1] - dt[0] : 1;
    dt.forEach(function (t) {
      if (t < e[0] || t > e[1]) return;
      svg.appendChild(s('text', { x: X(t), y: H - 6, 'class': 'tick', 'text-anchor': 'middle' }, fmtTick(t, dstep)));
    });
    card.appendChild(legend(items.map(function (it) { return { name: it.label + ' (n=' + it.samples.length + ')', color: it.color }; })));
    done(card, svg);
    parent.appendChild(card);
  }

  // Per-scheduler utilisation over time on a canvas: one row per scheduler,
  // time averaged into at most one bucket per pixel column.
  function heatmap(parent, run, hm) {
    var rows = hm.z.length, n = hm.t.length;
    var L = 44, W = 560, cellH = Math.max(3, Math.min(18, Math.floor(240 / rows)));
    var pw = W - L - 10, H = rows * cellH + 30;
    var maxV = 0;
    hm.z.forEach(function (r) { r.forEach(function (v) { if (v > maxV) maxV = v; }); });
    // Utilisation is a fraction or a percentage; other per-scheduler data
    // (run queue lengths) is scaled to its own maximum.
    var util = /util/.test(hm.name);
    var scale = util ? (maxV > 1.0001 ? 100 : 1) : Math.max(1, maxV);
    var cols = Math.min(n, pw);
    var card = box(run.label + ': ' + hm.name, rows + ' schedulers, ' + n + ' samples; ' +
                   (util ? 'dark = busy. A row going pale while others stay dark is a collapse.' : 'dark = longer (max ' + fmt(maxV) + ').'));
    var cv = h('canvas', { width: W, height: H, 'class': 'chart heatmap' });
    var ctx = cv.getContext('2d');
    ctx.font = '11px sans-serif';
    ctx.fillStyle = '#444';
    for (var r = 0; r < rows; r++) {
      var row = hm.z[r];
      for (var c = 0; c < cols; c++) {
        var a = Math.floor(c * n / cols), b = Math.max(a + 1, Math.floor((c + 1) * n / cols)), sum = 0;
        for (var i = a; i < b; i++) sum += row[i];
        var u = Math.max(0, Math.min(1, sum / (b - a) / scale));
        ctx.fillStyle = ramp(u);
        ctx.fillRect(L + c * pw / cols, r * cellH, Math.ceil(pw / cols), cellH - (cellH > 4 ? 1 : 0));
      }
      if (cellH >= 10 || r % Math.ceil(10 / cellH) === 0) {
        ctx.fillStyle = '#444';
        ctx.fillText(String(r + 1), 4, r * cellH + cellH - 2);
      }
    }
    ctx.fillStyle = '#444';
    ctx.fillText('0 s', L, H - 8);
    var lastT = hm.t[n - 1] - hm.t[0];
    ctx.fillText(fmt(lastT) + ' s', L + pw - 40, H - 8);
    card.appendChild(cv);
    rendered++;
    card.appendChild(h('div', { 'class': 'ramp' }, [util ? '0% ' : '0 ', h('span', { style: 'background:linear-gradient(90deg,' + [0, 0.25, 0.5, 0.75, 1].map(ramp).join(',') + ')' }),
                                                    util ? ' 100%' : ' ' + fmt(scale)]));
    parent.appendChild(card);
  }
  function ramp(u) {
    var stops = [[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
    var p = u * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(p)), f = p - i;
    var c = stops[i].map(function (v, k) { return Math.round(v + (stops[i + 1][k] - v) * f); });
    return 'rgb(' + c.join(',') + ')';
  }

  function section(id, title, note) {
    var sec = h('section', { id: id }, [h('h2', {}, [title])]);
    if (note) sec.appendChild(h('p', { 'class': 'muted' }, [note]));
    var grid = h('div', { 'class': 'grid' });
    sec.appendChild(grid);
    app.appendChild(sec);
    return grid;
  }
  function table(head, rows, cls) {
    return h('table', { 'class': cls || '' }, [
      h('thead', {}, [h('tr', {}, head.map(function (c) { return h('th', {}, [c]); }))]),
      h('tbody', {}, rows.map(function (r) {
        return h('tr', r.cls ? { 'class': r.cls } : {}, (r.cells || r).map(function (c) {
          return typeof c === 'object' && c !== null ? c : h('td', typeof c === 'number' ? { 'class': 'num' } : {}, [c === null ? '-' : c]);
        }));
      }))]);
  }
  var VERDICTS = { no_difference: '~ (no significant difference)', too_few_samples: 'too few samples',
                   unit_mismatch: 'units differ', no_baseline: 'no baseline' };
  function cellText(v, head) {
    if (v === null || v === undefined) return '-';
    if (head === 'verdict') return VERDICTS[v] || v;
    if (typeof v !== 'number') return v;
    if (/ vs |^CI /.test(head)) return pct(v);
    if (head === 'p') return v < 0.001 ? '<0.001' : v.toFixed(3);
    if (/%$/.test(head)) return PM + v.toFixed(1) + '%';
    return fmt(v);
  }

  // Groups items of every run by a key, keeping first-seen order.
  function byName(pick) {
    var order = [], map = {};
    data.runs.forEach(function (run, ri) {
      pick(run).forEach(function (item) {
        var k = item.name;
        if (!map[k]) { map[k] = []; order.push(k); }
        map[k].push({ run: run, ri: ri, item: item });
      });
    });
    return order.map(function (k) { return { name: k, entries: map[k] }; });
  }

  function overview() {
    var g = section('runs', 'Runs');
    g.appendChild(table(['', 'run', 'kind', 'started', 'benchmarks', 'command'], data.runs.map(function (r, i) {
      return [h('td', {}, [h('i', { 'class': 'swatch', style: 'background:' + color(i) })]),
              h('td', {}, [r.label, r.partial ? h('span', { 'class': 'badge warning' }, ['partial']) : null]),
              r.kind, r.started_at, r.benchmarks.length, (r.command || []).join(' ')];
    })));
  }
  function comparison() {
    if (!data.compare) return;
    var c = data.compare;
    var g = section('compare', 'Comparison against ' + data.runs[0].label,
                    'Change of each later run against the first, its confidence interval and verdict.');
    var rows = c.rows.map(function (r) {
      var cls = r.indexOf('slower') >= 0 ? 'bad' : r.indexOf('faster') >= 0 ? 'good' : '';
      return { cls: cls, cells: r.map(function (v, i) { return h('td', typeof v === 'number' ? { 'class': 'num' } : {}, [cellText(v, c.header[i])]); }) };
    });
    g.appendChild(table(c.header, rows, 'wide'));
    (c.notes || []).forEach(function (n) { g.appendChild(h('p', { 'class': 'note' }, [n])); });
  }
  function results() {
    var groups = byName(function (r) { return r.benchmarks; });
    if (!groups.length) return;
    var g = section('results', 'Results', 'Mean of each benchmark with its confidence interval (error bar).');
    groups.forEach(function (grp) {
      var first = grp.entries[0].item;
      // A benchmark that failed has no statistics: nothing to draw.
      var measured = grp.entries.filter(function (e) { return typeof e.item.stats.mean === 'number'; });
      if (!measured.length) return;
      barChart(g, grp.name, measured.map(function (e) {
        return { label: e.run.label + (e.run.partial ? '*' : ''), value: e.item.stats.mean, ci: e.item.ci, color: color(e.ri) };
      }), first.unit, first.better);
    });
    var d = section('distributions', 'Sample distributions');
    groups.forEach(function (grp) {
      var items = grp.entries.filter(function (e) { return e.item.samples.length > 1; }).map(function (e) {
        return { label: e.run.label, samples: e.item.samples, stats: e.item.stats, color: color(e.ri) };
      });
      if (items.length) distChart(d, grp.name + ' (' + grp.entries[0].item.unit + ')', items);
    });
  }
  // The series people look at first; the rest of the telemetry is drawn
  // on demand under a closed <details>, which keeps long reports fast.
  var PRIMARY = /^rates[.]|^util$|^util_dirty|^run_queue$|^processes$|^memory[.]total$|reductions_per_s|scheduler_busy_cores|steal_pct|machine_cpu_pct|throttled|monitor_cost_pct/;
  function series() {
    var groups = byName(function (r) { return r.series; });
    if (!groups.length) return;
    var g = section('timeline', 'Over time', 'Telemetry and per-second series; long series are reduced to first/min/max/last per pixel column.');
    var draw = function (parent, grp) {
      lineChart(parent, { title: grp.name, xLabel: 'seconds', series: grp.entries.map(function (e) {
        return { name: e.run.label + ' (' + e.item.y.length + ' points)', color: color(e.ri), x: e.item.t, y: e.item.y };
      }) });
    };
    var flat = function (grp) {
      var vals = [];
      grp.entries.forEach(function (e) { e.item.y.forEach(function (v) { if (typeof v === 'number') vals.push(v); }); });
      return vals.every(function (v) { return v === vals[0]; });
    };
    var primary = groups.filter(function (grp) {
      return grp.entries[0].item.source !== 'telemetry' || (PRIMARY.test(grp.name) && !flat(grp));
    });
    var rest = groups.filter(function (grp) { return primary.indexOf(grp) < 0; });
    primary.forEach(function (grp) { draw(g, grp); });
    // A watched broker's schedulers under the load's charts (amqp --watch).
    data.runs.forEach(function (r) { r.heatmaps.forEach(function (hm) { if (hm.broker) heatmap(g, r, hm); }); });
    if (rest.length) {
      var more = h('details', { 'class': 'more' }, [h('summary', {}, ['More telemetry (' + rest.length + ' series): ' +
                                                         rest.map(function (grp) { return grp.name; }).join(', ')])]);
      var inner = h('div', { 'class': 'grid' });
      more.appendChild(inner);
      more.addEventListener('toggle', function () {
        if (!more.open || inner.childNodes.length) return;
        try { rest.forEach(function (grp) { draw(inner, grp); }); } catch (e) { noteError('more telemetry: ' + e.message); }
        document.body.setAttribute('data-charts-rendered', String(rendered));
      });
      g.appendChild(more);
    }
  }
  function curves() {
    var groups = byName(function (r) { return r.curves; });
    if (!groups.length) return;
    var g = section('percentiles', 'Latency percentiles', 'From the recorded histograms; x axis stretches the tail (90, 99, 99.9, 99.99).');
    var xm = function (p) { return -Math.log(Math.max(1e-5, 1 - p / 100)) / Math.LN10; };
    var ticks = [[0, '0'], [50, '50'], [90, '90'], [99, '99'], [99.9, '99.9'], [99.99, '99.99']];
    groups.forEach(function (grp) {
      lineChart(g, { title: grp.name, subtitle: grp.entries[0].item.unit, xLabel: 'percentile', xMap: xm, xTicks: ticks,
                     series: grp.entries.map(function (e) {
                       return { name: e.run.label, color: color(e.ri), markers: true,
                                x: e.item.points.map(function (p) { return p[0]; }),
                                y: e.item.points.map(function (p) { return p[1]; }) };
                     }) });
    });
  }
  function heatmaps() {
    var any = data.runs.some(function (r) { return r.heatmaps.some(function (hm) { return !hm.broker; }); });
    if (!any) return;
    var g = section('schedulers', 'Scheduler utilisation over time');
    data.runs.forEach(function (r) { r.heatmaps.forEach(function (hm) { if (!hm.broker) heatmap(g, r, hm); }); });
  }
  function scaling() {
    var any = data.runs.some(function (r) { return r.scaling.length; });
    if (!any) return;
    var g = section('scaling', 'Scaling', 'Speedup against the smallest scheduler count (dashed: ideal linear) and parallel efficiency.');
    data.runs.forEach(function (r, ri) {
      r.scaling.forEach(function (sc) {
        lineChart(g, { title: r.label + ': ' + sc.group + ' speedup', xLabel: 'schedulers', yFromZero: true,
                       series: [{ name: 'speedup', color: color(ri), x: sc.x, y: sc.speedup, markers: true },
                                { name: 'ideal', color: '#999', dash: true, x: sc.x, y: sc.x.map(function (v) { return v / sc.x[0]; }) }] });
        lineChart(g, { title: r.label + ': ' + sc.group + ' efficiency', xLabel: 'schedulers', yFromZero: true,
                       series: [{ name: 'efficiency', color: color(ri), x: sc.x, y: sc.efficiency, markers: true }] });
      });
    });
  }
  function env() {
    if (!data.env.length) return;
    var g = section('env', 'Environment', data.runs.length > 1 ? 'Rows that differ between runs are highlighted.' : null);
    var only = h('input', { type: 'checkbox', id: 'envdiff' });
    if (data.runs.length > 1) g.appendChild(h('label', {}, [only, ' only differences']));
    var t = table(['key'].concat(data.runs.map(function (r) { return r.label; })), data.env.map(function (e) {
      return { cls: e.differs ? 'differs' : '', cells: [e.key].concat(e.values.map(function (v) { return v === null ? '-' : String(v); })) };
    }), 'env');
    only.addEventListener('change', function () { t.classList.toggle('only-diff', only.checked); });
    g.appendChild(t);
  }
  function findings() {
    var any = data.runs.some(function (r) { return r.findings.length; });
    var g = section('findings', 'Findings');
    if (!any) { g.appendChild(h('p', { 'class': 'muted' }, ['No findings: no detector fired.'])); return; }
    data.runs.forEach(function (r) {
      r.findings.forEach(function (f) {
        g.appendChild(h('div', { 'class': 'finding ' + (f.severity || 'info') }, [
          h('strong', {}, [r.label + ': ' + (f.title || f.id)]), h('span', { 'class': 'badge ' + (f.severity || 'info') }, [f.severity || 'info']),
          h('p', {}, [f.evidence || '']), f.advice ? h('p', { 'class': 'advice' }, ['Try: ' + f.advice]) : null]));
      });
    });
  }

  var data, app;
  try {
    data = JSON.parse(document.getElementById('beamlab-data').textContent);
    app = document.getElementById('app');
    [overview, comparison, results, series, curves, heatmaps, scaling, env, findings].forEach(function (f) {
      try { f(); } catch (e) { noteError(f.name + ': ' + (e && e.message ? e.message : e)); }
    });
  } catch (e) {
    noteError('report: ' + (e && e.message ? e.message : e));
  }
  document.body.setAttribute('data-charts-rendered', String(rendered));
  document.body.setAttribute('data-errors', errors.join(' | '));
})();
