// beamlab report: draws the charts of the HTML report (beamlab_report_html)
// from the JSON model embedded in <script id="beamlab-data">. Vanilla
// JavaScript, no library, no network: every chart is inline SVG (the
// scheduler heatmap a canvas); long series are reduced to the first, min,
// max and last point of each pixel column. Which chart a part of a run gets
// was decided from its typed content (beamlab_report_views): a sweep is a
// curve, concurrency is throughput with speedup, efficiency and the
// Universal Scalability Law, latency is its percentile spectrum, a matrix
// is its verdicts and every configuration per benchmark, a history is a
// trend per benchmark.
// Progress is recorded on <body> for the browser test: data-charts-rendered
// (charts drawn) and data-errors (every error caught, also through
// window.onerror). Each chart's <figure> says what it is in data-kind.
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
  var PM = '\u00b1';
  var SEVERITY = { info: '#3b82f6', warning: '#f59e0b', critical: '#ef4444' };

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
  // A row label in at most `px' pixels (the chart's left margin): a
  // longer one ends in an ellipsis, and its full text is the element's
  // <title> (shown on hover), so no label is cut off at the chart's edge.
  var LABEL_MAX = 300, CHAR_PX = 6.6;
  function rowLabel(attrs, label, px) {
    var full = String(label), fit = Math.max(4, Math.floor((px - 14) / CHAR_PX));
    var shown = full.length <= fit ? full : full.slice(0, fit - 1) + '\u2026';
    var t = s('text', Object.assign({ 'data-full': full }, attrs), shown);
    if (shown !== full) t.appendChild(s('title', {}, full));
    return t;
  }
  function setAttrs(e, attrs) {
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
  }
  function color(i) { return COLORS[i % COLORS.length]; }
  function isNum(v) { return typeof v === 'number' && isFinite(v); }

  // Numbers with 4 significant digits (or P), SI prefixes from 10 000 up.
  function fmt(v, p) {
    if (!isNum(v)) return '-';
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
  // An interval relative to its estimate, both sides (intervals of times
  // and rates are not symmetric): -12.0%/+15.3%, or one +-x% when they are.
  function relInterval(mean, ci) {
    if (!ci || !isNum(mean) || mean === 0 || !isNum(ci[0]) || !isNum(ci[1])) return 'no interval';
    var below = (100 * (mean - ci[0]) / Math.abs(mean)).toFixed(1), above = (100 * (ci[1] - mean) / Math.abs(mean)).toFixed(1);
    return below === above ? PM + above + '%' : '\u2212' + below + '%/+' + above + '%';
  }
  function pct(v) { return isNum(v) ? (v >= 0 ? '+' : '') + (100 * v).toFixed(1) + '%' : '-'; }
  // A value with its unit; times move to the unit that keeps them short.
  var TIME = { ns: 1, us: 1e3, ms: 1e6, s: 1e9 };
  function valueText(v, unit) {
    if (!isNum(v)) return '-';
    if (TIME[unit] !== undefined) {
      var ns = v * TIME[unit], a = Math.abs(ns);
      if (a < 1e4) return fmt(ns) + ' ns';
      if (a < 1e7) return fmt(ns / 1e3) + ' us';
      if (a < 1e10) return fmt(ns / 1e6) + ' ms';
      return fmt(ns / 1e9) + ' s';
    }
    return fmt(v) + (unit ? ' ' + unit : '');
  }
  // The display unit of times on an axis: the one that keeps the largest
  // value short (2.4M us is 2.4 s). Returns [factor, unit].
  function timeScale(values, unit) {
    if (TIME[unit] === undefined) return [1, unit];
    var m = 0;
    values.forEach(function (v) { if (isNum(v) && Math.abs(v) > m) m = Math.abs(v); });
    var ns = m * TIME[unit];
    var to = ns < 1e4 ? 'ns' : ns < 1e7 ? 'us' : ns < 1e10 ? 'ms' : 's';
    return [TIME[unit] / TIME[to], to];
  }
  function betterText(b) { return b === 'higher' ? 'higher is better' : 'lower is better'; }

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
        if (!isNum(v)) continue;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    });
    if (lo === Infinity) return [0, 1];
    if (lo === hi) { var pad = lo === 0 ? 1 : Math.abs(lo) * 0.1; return [lo - pad, hi + pad]; }
    return [lo, hi];
  }
  function log10(v) { return Math.log(v) / Math.LN10; }

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
  function box(title, subtitle, kind) {
    var d = h('figure', { 'class': 'card', 'data-kind': kind || 'chart' }, [h('figcaption', {}, [title])]);
    if (subtitle) d.appendChild(h('div', { 'class': 'muted' }, [subtitle]));
    return d;
  }
  function legend(items) {
    return h('div', { 'class': 'legend' }, items.filter(function (it) { return it.name; }).map(function (it) {
      return h('span', it.overlaps ? { 'class': 'overlaps' } : {},
               [swatch(it), it.name + (it.overlaps ? ' (overlaps ' + it.overlaps + ')' : '')]);
    }));
  }
  function done(card, svg) {
    card.appendChild(svg);
    rendered++;
  }

  // An axis: linear, or logarithmic (values <= 0 drawn one decade below
  // the smallest positive one's decade, at a tick labelled 0, past a break
  // of the axis (brk) that the chart marks: the distance from 0 to the
  // first decade is not to scale).
  function axis(values, log, fromZero, count) {
    var vals = values.filter(isNum);
    if (log) {
      var pos = vals.filter(function (v) { return v > 0; });
      if (pos.length) {
        var e = extent([pos.map(log10)]);
        var lo = Math.floor(e[0]), hi = Math.ceil(e[1]);
        var zero = vals.some(function (v) { return v <= 0; });
        var floor = zero ? lo - 1 : lo;
        if (hi === floor) hi = floor + 1;
        var ticks = [];
        if (zero) ticks.push([floor, '0']);
        for (var d = lo; d <= hi; d++) ticks.push([d, fmt(Math.pow(10, d))]);
        return { lo: floor, hi: hi, map: function (v) { return v > 0 ? log10(v) : floor; }, ticks: ticks, log: true,
                 brk: zero ? floor + 0.5 : null };
      }
    }
    var x = extent([vals]);
    if (fromZero && x[0] > 0) x[0] = 0;
    // Values that are never negative (a flat series of zeros) get no axis
    // below zero.
    if (vals.length && x[0] < 0 && vals.every(function (v) { return v >= 0; })) x[0] = 0;
    var t = niceTicks(x[0], x[1], count || 5);
    var step = t.length > 1 ? t[1] - t[0] : 1;
    return { lo: Math.min(x[0], t[0]), hi: Math.max(x[1], t[t.length - 1]), map: function (v) { return v; },
             ticks: t.map(function (v) { return [v, fmtTick(v, step)]; }), log: false };
  }

  // Peer series' styles: the first solid with round markers, the next
  // dashed with squares, dotted with triangles, ... (a series' own dash
  // is kept).
  var DASHES = [null, '7,3', '2,3', '9,3,2,3', '4,4', '1,5'];
  var SHAPES = ['circle', 'square', 'triangle', 'diamond', 'down', 'cross'];
  function distinguish(series) {
    series.forEach(function (sr, i) {
      if (!sr.dash && DASHES[i % DASHES.length]) sr.dash = DASHES[i % DASHES.length];
      sr.shape = SHAPES[i % SHAPES.length];
    });
  }
  // A marker of shape SHAPE, radius R, at (x, y): a circle, or a filled path
  // of class `marker' (whose title says the point).
  function marker(shape, x, y, r, attrs) {
    if (!shape || shape === 'circle') return s('circle', Object.assign({ cx: x.toFixed(1), cy: y.toFixed(1), r: r }, attrs));
    var d, k = r * 1.15;
    if (shape === 'square') d = 'M' + (x - k) + ',' + (y - k) + 'h' + 2 * k + 'v' + 2 * k + 'h' + (-2 * k) + 'z';
    else if (shape === 'triangle') d = 'M' + x + ',' + (y - 1.3 * r) + 'L' + (x + 1.2 * r) + ',' + (y + r) + 'L' + (x - 1.2 * r) + ',' + (y + r) + 'z';
    else if (shape === 'down') d = 'M' + x + ',' + (y + 1.3 * r) + 'L' + (x + 1.2 * r) + ',' + (y - r) + 'L' + (x - 1.2 * r) + ',' + (y - r) + 'z';
    else if (shape === 'diamond') d = 'M' + x + ',' + (y - 1.3 * r) + 'L' + (x + 1.3 * r) + ',' + y + 'L' + x + ',' + (y + 1.3 * r) + 'L' + (x - 1.3 * r) + ',' + y + 'z';
    else d = 'M' + (x - r) + ',' + (y - r) + 'L' + (x + r) + ',' + (y + r) + 'M' + (x + r) + ',' + (y - r) + 'L' + (x - r) + ',' + (y + r);
    var a = Object.assign({ d: d, 'class': 'marker' }, attrs);
    if (shape === 'cross') { a.stroke = attrs.fill; a['stroke-width'] = 2; a.fill = 'none'; }
    return s('path', a);
  }
  // A legend swatch that shows the series' line and marker as drawn.
  function swatch(it) {
    if (!it.dash && !it.shape) return h('i', { style: 'background:' + it.color });
    var sw = s('svg', { width: 30, height: 12, 'class': 'swatch-line' });
    sw.appendChild(s('path', Object.assign({ d: 'M1,6H29', stroke: it.color, 'stroke-width': 2, fill: 'none' },
                                           it.dash ? { 'stroke-dasharray': it.dash === true ? '5,4' : it.dash } : {})));
    if (it.shape) sw.appendChild(marker(it.shape, 15, 6, 3.5, { fill: it.color }));
    return sw;
  }

  // A line chart's series ready to draw (opts changed in place): gaps
  // skipped, times in the unit that keeps them short, peers told apart;
  // false when nothing is left to draw.
  function prepareLine(opts) {
    // Gaps (null) in a series are skipped: the line joins its neighbours,
    // unless the series breaks at them (breakAtNull: a watched node that
    // did not answer): then the line starts again after the gap.
    opts.series = opts.series.map(function (sr) {
      var x = [], y = [], lo = [], hi = [], starts = [0];
      for (var i = 0; i < sr.y.length; i++) {
        if (isNum(sr.y[i]) && isNum(sr.x[i])) {
          x.push(sr.x[i]); y.push(sr.y[i]);
          if (sr.band) { lo.push(sr.band.lo[i]); hi.push(sr.band.hi[i]); }
        } else if (sr.breakAtNull && isNum(sr.x[i]) && x.length && starts[starts.length - 1] !== x.length) {
          starts.push(x.length);
        }
      }
      return Object.assign({}, sr, { x: x, y: y, starts: starts, band: sr.band ? { lo: lo, hi: hi } : null });
    }).filter(function (sr) { return sr.x.length > 0; });
    if (!opts.series.length) return false;
    if (opts.yUnit) {
      var all = [];
      opts.series.forEach(function (sr) { all = all.concat(sr.y); if (sr.band) all = all.concat(sr.band.hi); });
      var ts = timeScale(all, opts.yUnit), f = ts[0];
      if (f !== 1) {
        var sc = function (a) { return a.map(function (v) { return isNum(v) ? v * f : v; }); };
        opts.series = opts.series.map(function (sr) {
          return Object.assign({}, sr, { y: sc(sr.y), band: sr.band ? { lo: sc(sr.band.lo), hi: sc(sr.band.hi) } : null,
                                         flags: (sr.flags || []).map(function (fl) { return Object.assign({}, fl, { y: fl.y * f }); }) });
        });
      }
      opts.yLabel = (opts.yLabel || '').replace('(' + opts.yUnit + ')', '(' + ts[1] + ')');
      // The title names the unit the axis shows.
      if (opts.title) opts.title = opts.title.replace('(' + opts.yUnit + ')', '(' + ts[1] + ')');
      if (opts.yLabel === opts.yUnit) opts.yLabel = ts[1];
      opts.yShown = ts[1];
    }
    // One unit per chart: a subtitle that names the unit is written for
    // the one the axis shows (subtitle(unit)), as are the points' tooltips.
    if (typeof opts.subtitle === 'function') opts.subtitle = opts.subtitle(opts.yShown || opts.yUnit || '');
    // Peer series (runs, repetitions, a sweep's series) each get their own
    // dash pattern and marker shape, so they can be told apart in grey;
    // one another's exact copy (two runs of identical code) is drawn
    // under it wider, with bigger markers, and the legend says which it
    // overlaps: no series hides behind another.
    if (opts.distinct && opts.series.length > 1) distinguish(opts.series);
    return true;
  }
  // A prepared line chart's y axis.
  function lineYAxis(opts) {
    var ys = [];
    opts.series.forEach(function (sr) {
      ys = ys.concat(sr.y);
      if (sr.band) ys = ys.concat(sr.band.lo, sr.band.hi);
    });
    var ya = axis(ys, opts.yLog, opts.yFromZero, 5);
    if (opts.yInt) ya.ticks = ya.ticks.filter(function (t) { return Math.abs(t[0] - Math.round(t[0])) < 1e-9; });
    return ya;
  }
  // The left margin a y axis needs: room for its longest tick label
  // beside the axis' label (25.275M ran into `bytes').
  function yMargin(ya) {
    var chars = Math.max.apply(null, ya.ticks.map(function (t) { return String(t[1]).length; }).concat([0]));
    return Math.ceil(26 + 6.4 * chars);
  }

  // Line chart. opts: title, subtitle, kind, series [{name, color, x, y,
  // dash, markers, scatter, band: {lo, hi}, cls}], xLabel, yLabel, xLog,
  // yLog, xAxis (a ready axis: xTicks with xMap), yFromZero, marks [{from,
  // to, title, color}], width, height, parent card (into).
  function lineChart(parent, opts) {
    if (!prepareLine(opts)) return null;
    // A long measure on the y axis (`wall-clock time per encode+decode
    // (us)') gets the height it needs, whole, never cut off at the edge.
    // Charts on one time axis share its left margin (timeAxis' `left').
    var W = opts.width || 560, H = opts.height || Math.max(250, Math.ceil(String(opts.yLabel || '').length * 7) + 66),
        L = opts.xAxis ? opts.xAxis.left || TIME_L : 62, R = 14, T = 12, B = 42;
    var pw = W - L - R, ph = H - T - B;
    var yTip = opts.yShown || opts.yUnit || '';
    var card = opts.into || box(opts.title, opts.subtitle, opts.kind);
    var xs = [];
    opts.series.forEach(function (sr) { xs = xs.concat(sr.x); });
    var xa = opts.xAxis || axis(xs, opts.xLog, false, 6);
    // Counts of workers or schedulers: whole ticks only.
    if (opts.xInt) xa.ticks = xa.ticks.filter(function (t) { return Math.abs(t[0] - Math.round(t[0])) < 1e-9; });
    var ya = lineYAxis(opts);
    L = Math.max(L, yMargin(ya));
    pw = W - L - R;
    // A few pixels inside the frame, so a point at the end of an axis is
    // drawn whole inside the plot, not on (or over) its edge.
    var PAD = 6;
    var XA = function (a) { return L + PAD + (a - xa.lo) / ((xa.hi - xa.lo) || 1) * (pw - 2 * PAD); };
    var YA = function (a) { return T + ph - PAD - (a - ya.lo) / ((ya.hi - ya.lo) || 1) * (ph - 2 * PAD); };
    var X = function (v) { return XA(xa.map(v)); };
    var Y = function (v) { return YA(ya.map(v)); };
    if (opts.distinct) overlaps(opts.series, X, Y);
    var svg = frame(opts.title, W, H);
    if (xa.log) svg.setAttribute('data-x-scale', 'log');
    if (xa.ordinal) svg.setAttribute('data-x-scale', 'ordinal');
    if (ya.log) svg.setAttribute('data-y-scale', 'log');
    svg.setAttribute('data-x-lo', xa.lo);
    svg.setAttribute('data-x-hi', xa.hi);
    // (the pixels of the axis' ends, for the browser test: an instant's x)
    svg.setAttribute('data-x-px', (L + PAD) + ' ' + (L + pw - PAD));
    ya.ticks.forEach(function (t) {
      var py = YA(t[0]);
      svg.appendChild(s('line', { x1: L, x2: L + pw, y1: py, y2: py, 'class': 'grid' }));
      svg.appendChild(s('text', { x: L - 6, y: py + 4, 'class': 'tick', 'data-axis': 'y', 'text-anchor': 'end' }, t[1]));
    });
    xa.ticks.forEach(function (t) {
      var px = XA(t[0]);
      if (px < L - 1 || px > L + pw + 1) return;
      svg.appendChild(s('line', { x1: px, x2: px, y1: T + ph, y2: T + ph + 4, 'class': 'axis' }));
      svg.appendChild(s('text', { x: px, y: T + ph + 16, 'class': 'tick', 'data-axis': 'x', 'text-anchor': 'middle' }, t[1]));
    });
    svg.appendChild(s('rect', { x: L, y: T, width: pw, height: ph, 'class': 'plot' }));
    // A log axis' break between its 0 and its first decade: a gap in the
    // axis line crossed by two slanted strokes.
    if (isNum(xa.brk)) {
      var bx = XA(xa.brk), by = T + ph;
      var xb = s('g', { 'class': 'axis-break', 'data-axis': 'x' });
      xb.appendChild(s('rect', { x: bx - 3, y: by - 1.5, width: 6, height: 3, fill: '#fff' }));
      xb.appendChild(s('path', { d: 'M' + (bx - 6) + ',' + (by + 5) + 'l6,-10M' + bx + ',' + (by + 5) + 'l6,-10', stroke: '#555', 'stroke-width': 1.2, fill: 'none' }));
      xb.appendChild(s('title', {}, 'axis break: 0 is drawn one decade below the first, not to scale'));
      svg.appendChild(xb);
    }
    if (isNum(ya.brk)) {
      var yb = YA(ya.brk), yg = s('g', { 'class': 'axis-break', 'data-axis': 'y' });
      yg.appendChild(s('rect', { x: L - 1.5, y: yb - 3, width: 3, height: 6, fill: '#fff' }));
      yg.appendChild(s('path', { d: 'M' + (L - 5) + ',' + (yb + 1) + 'l10,-6M' + (L - 5) + ',' + (yb + 7) + 'l10,-6', stroke: '#555', 'stroke-width': 1.2, fill: 'none' }));
      yg.appendChild(s('title', {}, 'axis break: 0 is drawn one decade below the first, not to scale'));
      svg.appendChild(yg);
    }
    (opts.marks || []).forEach(function (m) {
      var x0 = Math.max(L, X(m.from)), x1 = Math.min(L + pw, X(Math.max(m.to, m.from)));
      // The interval the finding states, in the axis' seconds.
      var g = s('g', { 'class': 'finding-mark', 'data-from': m.from, 'data-to': m.to });
      g.appendChild(s('rect', { x: x0, y: T, width: Math.max(2, x1 - x0), height: ph, fill: m.color, 'fill-opacity': 0.15 }));
      g.appendChild(s('title', {}, m.title));
      svg.appendChild(g);
    });
    // In three layers: every band, then every line, then every marker, so
    // no band tints a line and no line hides a point.
    opts.series.forEach(function (sr) {
      var dx = sr.offset || 0;
      if (sr.band && sr.whiskers) {
        var wp = '';
        for (var w = 0; w < sr.x.length; w++) {
          if (!isNum(sr.band.lo[w]) || !isNum(sr.band.hi[w])) continue;
          var wx = (X(sr.x[w]) + dx).toFixed(1), wlo = Y(sr.band.lo[w]).toFixed(1), whi = Y(sr.band.hi[w]).toFixed(1);
          wp += 'M' + (wx - 4) + ',' + whi + 'h8M' + wx + ',' + whi + 'V' + wlo + 'M' + (wx - 4) + ',' + wlo + 'h8';
        }
        if (wp) svg.appendChild(s('path', { d: wp, stroke: sr.color, 'stroke-width': 1.5, fill: 'none', 'class': 'errorbar' }));
      } else if (sr.band) {
        var up = '', down = '';
        for (var b = 0; b < sr.x.length; b++) {
          if (!isNum(sr.band.lo[b]) || !isNum(sr.band.hi[b])) continue;
          up += (up ? 'L' : 'M') + X(sr.x[b]).toFixed(1) + ',' + Y(sr.band.hi[b]).toFixed(1);
          down = 'L' + X(sr.x[b]).toFixed(1) + ',' + Y(sr.band.lo[b]).toFixed(1) + down;
        }
        if (up) svg.appendChild(s('path', { d: up + down + 'Z', fill: sr.color, 'fill-opacity': 0.15, stroke: 'none', 'class': 'ci-band' }));
      }
    });
    opts.series.forEach(function (sr) {
      var cls = sr.cls || 'series';
      if (!sr.scatter && !sr.noLine) {
        var path = '';
        sr.starts.forEach(function (from, k) {
          var to = k + 1 < sr.starts.length ? sr.starts[k + 1] : sr.x.length;
          var sx = sr.x.slice(from, to), sy = sr.y.slice(from, to);
          var d = xa.log ? { x: sx, y: sy } : downsample(sx, sy, opts.xAxis ? sr.x[0] : xa.lo, opts.xAxis ? sr.x[sr.x.length - 1] : xa.hi, pw);
          for (var i = 0; i < d.x.length; i++) {
            path += (i ? 'L' : 'M') + X(d.x[i]).toFixed(1) + ',' + Y(d.y[i]).toFixed(1);
          }
          // A lone sample between two gaps: a dot (a one-point path draws nothing).
          if (d.x.length === 1 && sr.starts.length > 1) {
            svg.appendChild(s('circle', { cx: X(d.x[0]).toFixed(1), cy: Y(d.y[0]).toFixed(1), r: 2, fill: sr.color, 'class': 'lone-point' }));
          }
        });
        var attrs = { d: path, fill: 'none', stroke: sr.color, 'stroke-width': sr.width || 1.5, 'class': cls, 'data-series': sr.name || '' };
        if (sr.dash) attrs['stroke-dasharray'] = sr.dash === true ? '5,4' : sr.dash;
        svg.appendChild(s('path', attrs));
      }
    });
    opts.series.forEach(function (sr) {
      var cls = sr.cls || 'series';
      var dx = sr.offset || 0;
      if (sr.scatter || sr.markers || sr.x.length <= 3) {
        var g = s('g', { 'class': sr.scatter ? cls : 'markers', fill: sr.color, 'data-series': sr.name || '' });
        for (var j = 0; j < sr.x.length; j++) {
          var c = marker(sr.scatter ? 'circle' : sr.shape, X(sr.x[j]) + dx, Y(sr.y[j]), sr.scatter ? 2.5 : sr.radius || 3,
                         { fill: sr.color, 'fill-opacity': sr.scatter ? 0.55 : 1 });
          // The point in the axes' terms: x (its label) and y in the axis' unit.
          c.appendChild(s('title', {}, (sr.name ? sr.name + ': ' : '') + (opts.xLabel ? opts.xLabel + ' ' : '') + fmt(sr.x[j]) + ', ' +
                          fmt(sr.y[j]) + (yTip ? ' ' + yTip : '')));
          g.appendChild(c);
        }
        svg.appendChild(g);
      }
      (sr.flags || []).forEach(function (f) {
        // Beside the point in the direction of the change, unless that
        // leaves the plot (over the axis' tick labels): then the other side.
        var py = Y(f.y), off = f.up ? -10 : 10;
        if (py + off + 6 > T + ph || py + off - 6 < T) off = -off;
        var fx = X(f.x), fy = py + off;
        var tri = f.up ? 'M' + fx + ',' + (fy - 5) + 'l5,8h-10z' : 'M' + fx + ',' + (fy + 5) + 'l5,-8h-10z';
        var m = s('path', { d: tri, fill: f.color, 'class': 'change-mark', 'data-verdict': f.verdict });
        m.appendChild(s('title', {}, f.title));
        svg.appendChild(m);
      });
    });
    if (opts.xLabel) svg.appendChild(s('text', { x: L + pw / 2, y: H - 5, 'class': 'label x-label', 'text-anchor': 'middle' }, opts.xLabel));
    if (opts.yLabel) svg.appendChild(s('text', { x: 12, y: T + ph / 2, 'class': 'label y-label', 'text-anchor': 'middle',
                                                 transform: 'rotate(-90 12 ' + (T + ph / 2) + ')' }, opts.yLabel));
    done(card, svg);
    if (!opts.noLegend) card.appendChild(legend(opts.series.filter(function (sr) { return !sr.hideLegend; })));
    // Nothing is clamped silently: an interval the log axis cannot show
    // below zero says so.
    if (ya.log && opts.series.some(function (sr) { return sr.band && sr.band.lo.some(function (v) { return isNum(v) && v <= 0; }); })) {
      card.appendChild(h('div', { 'class': 'muted band-floor' }, ['An interval reaching zero or below (as its document gives it) is cut at the log axis\u2019 0.']));
    }
    if (!opts.into) parent.appendChild(card);
    return card;
  }

  // A later series drawn within a pixel or two of an earlier one at every
  // point overlaps it: the earlier one is drawn wider, with bigger markers
  // (once per series over it), so it shows around the one on top.
  function overlaps(series, X, Y) {
    series.forEach(function (sr) { sr.under = 0; });
    series.forEach(function (b, j) {
      for (var i = 0; i < j; i++) {
        var a = series[i];
        if (a.scatter || b.scatter || a.x.length !== b.x.length) continue;
        var same = a.x.every(function (x, k) {
          return Math.abs(X(x) + (a.offset || 0) - X(b.x[k]) - (b.offset || 0)) <= 1 && Math.abs(Y(a.y[k]) - Y(b.y[k])) <= 1.5;
        });
        if (same) {
          if (!b.overlaps) b.overlaps = a.name;
          a.under++;
        }
      }
    });
    series.forEach(function (sr) {
      if (!sr.under) return;
      sr.width = (sr.width || 1.5) + 2.5 * sr.under;
      // (bigger markers stay inside the plot's 6-pixel padding)
      sr.radius = 4.5;
    });
  }

  // One benchmark across runs: a bar per run with its CI as error bar.
  function barChart(parent, name, items, unit, better, method, measure) {
    var ts = timeScale(items.map(function (it) { return it.value; }), unit), f = ts[0];
    unit = ts[1];
    items = items.map(function (it) { return Object.assign({}, it, { value: it.value * f, ci: it.ci ? [it.ci[0] * f, it.ci[1] * f] : null }); });
    // Room for the longest run label on the left and the value on the right.
    var longest = Math.max.apply(null, items.map(function (it) { return String(it.label).length; }).concat([0]));
    var texts = items.map(function (it) { return valueText(it.value, unit) + (it.ci ? ' [' + fmt(it.ci[0]) + ', ' + fmt(it.ci[1]) + ']' : ''); });
    var longestText = Math.max.apply(null, texts.map(function (t) { return t.length; }).concat([0]));
    var L = Math.min(LABEL_MAX, Math.max(70, 14 + CHAR_PX * longest)), R = Math.max(170, 12 + 6.4 * longestText), rowH = 30, T = 8, W = L + 260 + R;
    var H = T + items.length * rowH + 40;
    // A watched node's series are observations, not a benchmark: no better.
    var card = box(withUnit(name, measure, unit), [unit, better ? betterText(better) : 'observed on the watched node, not measured by a benchmark'].filter(Boolean).join(', ') +
                   '; error bar: ' + (method || 'interval of the mean'), 'results');
    var vals = [];
    items.forEach(function (it) { vals.push(it.value); if (it.ci) { vals.push(it.ci[0], it.ci[1]); } });
    var e = extent([vals]);
    var lo = Math.min(0, e[0]), hi = Math.max(0, e[1]);
    var pw = W - L - R;
    var X = function (v) { return L + (v - lo) / ((hi - lo) || 1) * pw; };
    var svg = frame(name, W, H);
    var bt = niceTicks(lo, hi, 4), bstep = bt.length > 1 ? bt[1] - bt[0] : 1;
    bt.forEach(function (t) {
      svg.appendChild(s('line', { x1: X(t), x2: X(t), y1: T, y2: T + items.length * rowH, 'class': 'grid' }));
      svg.appendChild(s('text', { x: X(t), y: T + items.length * rowH + 14, 'class': 'tick', 'data-axis': 'x', 'text-anchor': 'middle' }, fmtTick(t, bstep)));
    });
    items.forEach(function (it, i) {
      var y = T + i * rowH;
      svg.appendChild(rowLabel({ x: L - 6, y: y + rowH / 2 + 4, 'class': 'tick row-label', 'text-anchor': 'end' }, it.label, L));
      svg.appendChild(s('rect', { x: Math.min(X(0), X(it.value)), y: y + 5, width: Math.abs(X(it.value) - X(0)),
                                  height: rowH - 10, fill: it.color, 'fill-opacity': 0.75 }));
      if (it.ci) {
        var cy = y + rowH / 2;
        svg.appendChild(s('path', { d: 'M' + X(it.ci[0]) + ',' + (cy - 7) + 'v14M' + X(it.ci[0]) + ',' + cy + 'H' +
                                       X(it.ci[1]) + 'M' + X(it.ci[1]) + ',' + (cy - 7) + 'v14',
                                    stroke: '#111', 'stroke-width': 1.5, fill: 'none', 'class': 'errorbar' }));
      }
      svg.appendChild(s('text', { x: W - R + 6, y: y + rowH / 2 + 4, 'class': 'tick' }, texts[i]));
    });
    svg.appendChild(s('text', { x: L + pw / 2, y: H - 4, 'class': 'label x-label', 'text-anchor': 'middle' }, axisLabel(measure, unit)));
    done(card, svg);
    parent.appendChild(card);
  }

  // Rows of points: each row's samples as dots, its mean as a bar with the
  // interval as whiskers (a matrix's configurations, a small sample).
  function intervalChart(parent, title, subtitle, unit, rows, kind, measure) {
    var ts = timeScale(rows.map(function (r) { return r.mean; }), unit), f = ts[0];
    unit = ts[1];
    var sc = function (v) { return isNum(v) ? v * f : v; };
    rows = rows.map(function (r) { return Object.assign({}, r, { samples: r.samples.map(sc), mean: sc(r.mean), ci: r.ci ? r.ci.map(sc) : null }); });
    // The row labels get the room they need (a matrix's configurations can
    // be long); the plot keeps its width.
    var longest = Math.max.apply(null, rows.map(function (r) { return String(r.label).length; }).concat([0]));
    var vals = [];
    rows.forEach(function (r) { vals = vals.concat(r.samples); if (r.ci) vals.push(r.ci[0], r.ci[1]); if (isNum(r.mean)) vals.push(r.mean); });
    var xa = axis(vals, false, false, 5);
    // The last tick is centred near the plot's right end: room for half
    // of it beyond (12.3458M ran off the chart's edge).
    var tickChars = Math.max.apply(null, xa.ticks.map(function (t) { return String(t[1]).length; }).concat([0]));
    var L = Math.min(LABEL_MAX, Math.max(150, 14 + CHAR_PX * longest)), R = Math.max(16, Math.ceil(CHAR_PX * tickChars / 2) - 6),
        rowH = 30, T = 8, W = L + 378 + R;
    var H = T + rows.length * rowH + 40;
    // The title names the measure: the unit the axis shows.
    title = title.replace(' ({unit})', withUnit('', measure, unit));
    var card = box(title, subtitle, kind);
    var pw = W - L - R, PAD = 8;
    // Inside a frame, a few pixels from its edges: a sample at the end of
    // the axis is drawn whole inside it.
    var X = function (v) { return L + PAD + (v - xa.lo) / ((xa.hi - xa.lo) || 1) * (pw - 2 * PAD); };
    var svg = frame(title, W, H);
    svg.appendChild(s('rect', { x: L, y: T, width: pw, height: rows.length * rowH, 'class': 'plot' }));
    xa.ticks.forEach(function (t) {
      svg.appendChild(s('line', { x1: X(t[0]), x2: X(t[0]), y1: T, y2: T + rows.length * rowH, 'class': 'grid' }));
      svg.appendChild(s('text', { x: X(t[0]), y: T + rows.length * rowH + 14, 'class': 'tick', 'data-axis': 'x', 'text-anchor': 'middle' }, t[1]));
    });
    rows.forEach(function (r, i) {
      var cy = T + i * rowH + rowH / 2;
      var g = s('g', { 'class': 'interval-row', 'data-row': r.label });
      g.appendChild(rowLabel({ x: L - 6, y: cy + 4, 'class': 'tick row-label', 'text-anchor': 'end' }, r.label, L));
      r.samples.forEach(function (v) {
        g.appendChild(s('circle', { cx: X(v).toFixed(1), cy: cy + ((v * 7919) % 7 - 3), r: 2.5, fill: r.color, 'fill-opacity': 0.5, 'class': 'sample' }));
      });
      if (r.ci) {
        g.appendChild(s('path', { d: 'M' + X(r.ci[0]) + ',' + (cy - 6) + 'v12M' + X(r.ci[0]) + ',' + cy + 'H' + X(r.ci[1]) +
                                     'M' + X(r.ci[1]) + ',' + (cy - 6) + 'v12', stroke: '#111', 'stroke-width': 1.5, fill: 'none', 'class': 'errorbar' }));
      }
      if (isNum(r.mean)) g.appendChild(s('path', { d: 'M' + X(r.mean) + ',' + (cy - 9) + 'v18', stroke: r.color, 'stroke-width': 3, 'class': 'mean' }));
      var t = s('title', {}, r.label + ': ' + valueText(r.mean, unit) + (r.ci ? ' [' + fmt(r.ci[0]) + ', ' + fmt(r.ci[1]) + ']' : '') +
                ', n=' + r.samples.length + (r.note ? '; ' + r.note : ''));
      g.appendChild(t);
      svg.appendChild(g);
    });
    svg.appendChild(s('text', { x: L + pw / 2, y: H - 5, 'class': 'label x-label', 'text-anchor': 'middle' }, axisLabel(measure, unit)));
    done(card, svg);
    parent.appendChild(card);
    return card;
  }

  // Sample distributions of one benchmark across runs: histograms on common
  // bins, and a box plot (p5, p25, median, p75, p95) per run below.
  function distChart(parent, name, unit, items, measure) {
    var W = 420, L = 52, R = 14, T = 10, histH = 120, boxH = 22;
    var H = T + histH + items.length * boxH + 46;
    var pw = W - L - R;
    var e = extent(items.map(function (it) { return it.samples; }));
    var bins = Math.max(5, Math.min(40, Math.round(Math.sqrt(Math.max.apply(null, items.map(function (it) { return it.samples.length; }))))));
    var width = (e[1] - e[0]) / bins;
    var X = function (v) { return L + (v - e[0]) / (e[1] - e[0]) * pw; };
    var counts = items.map(function (it) {
      var c = new Array(bins).fill(0);
      it.samples.forEach(function (v) { c[Math.min(bins - 1, Math.floor((v - e[0]) / width))]++; });
      return c;
    });
    var maxC = Math.max.apply(null, counts.map(function (c) { return Math.max.apply(null, c); })) || 1;
    var card = box(name, 'histogram on common bins; box: p5, p25, median, p75, p95', 'distribution');
    var svg = frame(name, W, H);
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
      svg.appendChild(s('text', { x: X(t), y: H - 22, 'class': 'tick', 'data-axis': 'x', 'text-anchor': 'middle' }, fmtTick(t, dstep)));
    });
    svg.appendChild(s('text', { x: L + pw / 2, y: H - 4, 'class': 'label x-label', 'text-anchor': 'middle' }, axisLabel(measure, unit)));
    // The count axis: samples per bin, 0 and the tallest bin.
    svg.appendChild(s('path', { d: 'M' + (L - 4) + ',' + T + 'V' + (T + histH), 'class': 'axis' }));
    [[0, T + histH], [maxC, T]].forEach(function (c) {
      svg.appendChild(s('text', { x: L - 8, y: c[1] + 4, 'class': 'tick', 'data-axis': 'y', 'text-anchor': 'end' }, String(c[0])));
    });
    svg.appendChild(s('text', { x: 12, y: T + histH / 2, 'class': 'label y-label', 'text-anchor': 'middle',
                                transform: 'rotate(-90 12 ' + (T + histH / 2) + ')' }, 'samples'));
    card.appendChild(legend(items.map(function (it) { return { name: it.label + ' (n=' + it.samples.length + ')', color: it.color }; })));
    done(card, svg);
    parent.appendChild(card);
  }

  // Per-scheduler utilisation over time on a canvas: one row per scheduler,
  // time averaged into at most one bucket per pixel column. Its time axis
  // is its clock's (timeAxis): the same origin, range and ticks as the
  // line charts of that clock, at the same pixels (#35: a broker's
  // heatmap said 0..7 s beside line charts of 1..8 s). Each sample's cell
  // reaches halfway to its neighbours.
  function heatmap(parent, run, hm) {
    var rows = hm.z.length, n = hm.t.length;
    var clock = hmClock(hm), xa = timeAxis(data.runs, clock);
    var L = xa.left, R = 14, W = 560, PAD = 6, cellH = Math.max(3, Math.min(18, Math.floor(240 / rows)));
    var pw = W - L - R, plotH = rows * cellH, H = plotH + 40;
    var X = function (v) { return L + PAD + (v - xa.lo) / ((xa.hi - xa.lo) || 1) * (pw - 2 * PAD); };
    var edge = function (i) {
      if (n === 1) return i === 0 ? L : L + pw;
      if (i === 0) return X(hm.t[0]) - (X(hm.t[1]) - X(hm.t[0])) / 2;
      if (i === n) return X(hm.t[n - 1]) + (X(hm.t[n - 1]) - X(hm.t[n - 2])) / 2;
      return (X(hm.t[i - 1]) + X(hm.t[i])) / 2;
    };
    var clip = function (px) { return Math.max(L, Math.min(L + pw, px)); };
    var maxV = 0;
    hm.z.forEach(function (r) { r.forEach(function (v) { if (v > maxV) maxV = v; }); });
    // Utilisation is a fraction or a percentage; other per-scheduler data
    // (run queue lengths) is scaled to its own maximum.
    var util = /util/.test(hm.name);
    var scale = util ? (maxV > 1.0001 ? 100 : 1) : Math.max(1, maxV);
    var cols = Math.min(n, pw);
    var who = (run.subject || workloads([{ run: run }])) + (data.runs.length > 1 ? ' (' + run.label + ')' : '');
    var card = box(who + ': ' + hm.name, rows + (rows === 1 ? ' scheduler, ' : ' schedulers, ') + n + ' samples; ' +
                   (util ? 'dark = busy. A row going pale while others stay dark is a collapse.' : 'dark = longer (max ' + fmt(maxV) + ').'), 'heatmap');
    // (the axis as drawn, for the browser test: a canvas has no DOM of its ticks)
    var cv = h('canvas', { width: W, height: H, 'class': 'chart heatmap', 'data-x-lo': xa.lo, 'data-x-hi': xa.hi,
                           'data-x-ticks': xa.ticks.map(function (t) { return t[1]; }).join(' '),
                           'data-x-px': (L + PAD) + ' ' + (L + pw - PAD) });
    var ctx = cv.getContext('2d');
    ctx.font = '11px sans-serif';
    for (var r = 0; r < rows; r++) {
      var row = hm.z[r];
      for (var c = 0; c < cols; c++) {
        var a = Math.floor(c * n / cols), b = Math.max(a + 1, Math.floor((c + 1) * n / cols)), sum = 0;
        for (var i = a; i < b; i++) sum += row[i];
        var u = Math.max(0, Math.min(1, sum / (b - a) / scale));
        var x0 = clip(edge(a)), x1 = clip(edge(b));
        ctx.fillStyle = ramp(u);
        ctx.fillRect(x0, r * cellH, Math.max(1, x1 - x0), cellH - (cellH > 4 ? 1 : 0));
      }
      if (cellH >= 10 || r % Math.ceil(10 / cellH) === 0) {
        ctx.fillStyle = '#444';
        ctx.textAlign = 'right';
        ctx.fillText(String(r + 1), L - 6, r * cellH + cellH - 2);
      }
    }
    ctx.fillStyle = '#444';
    ctx.strokeStyle = '#888';
    ctx.textAlign = 'center';
    xa.ticks.forEach(function (t) {
      var px = X(t[0]);
      if (px < L - 1 || px > L + pw + 1) return;
      ctx.beginPath(); ctx.moveTo(px, plotH); ctx.lineTo(px, plotH + 4); ctx.stroke();
      ctx.fillText(t[1], px, plotH + 16);
    });
    ctx.fillText(clockLabel(clock), L + pw / 2, H - 5);
    card.appendChild(cv);
    rendered++;
    card.appendChild(h('div', { 'class': 'ramp' }, [util ? '0% ' : '0 ', h('span', { style: 'background:linear-gradient(90deg,' + [0, 0.25, 0.5, 0.75, 1].map(ramp).join(',') + ')' }),
                                                    util ? ' 100%' : ' ' + fmt(scale)]));
    parent.appendChild(card);
  }
  // The clock of a series: the run's (`clock': its samples and telemetry
  // from one origin, the run's start, #35); in an older document a run's
  // telemetry, or its load (its samples' intervals and the watched
  // broker's telemetry: seconds since the load started); null for the
  // rest (per-second series of repetitions).
  function clockOf(sr) {
    if (sr.clock) return sr.clock;
    var source = sr.source;
    return source === 'telemetry' ? 'telemetry' : source === 'broker' || source === 'samples' ? 'load' : null;
  }
  function hmClock(hm) { return hm.clock || (hm.broker ? 'load' : 'telemetry'); }
  // The time axis' title: what its zero is, where one origin is known.
  function clockLabel(clock) {
    return clock === 'run' ? 's since the run started' : clock === 'load' ? 's since the load started' : 'seconds';
  }
  // The left edge of every chart on a shared time axis (line charts and
  // heatmaps): stacked, an instant sits at the same x in each.
  var TIME_L = 78;
  // One time axis for every chart of these runs on CLOCK (the page's
  // runs: each chart of several runs draws them on one axis anyway):
  // their line charts and heatmaps share its origin, range and ticks.
  // The axis is made once per clock, with `left': the plot's left edge
  // in every chart on it (TIME_L, or the room the widest y tick label of
  // those charts needs, as series() finds it before drawing them), so that
  // no label is clipped and the plot areas still line up.
  var timeAxes = {};
  function timeAxis(runs, clock) {
    if (timeAxes[clock]) return timeAxes[clock];
    var ts = [];
    runs.forEach(function (r) {
      r.series.forEach(function (sr) { if (clockOf(sr) === clock) ts = ts.concat(sr.t); });
      r.heatmaps.forEach(function (hm) { if (hmClock(hm) === clock) ts = ts.concat(hm.t); });
    });
    timeAxes[clock] = Object.assign(axis(ts, false, false, 6), { left: TIME_L });
    return timeAxes[clock];
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
  // A table in a box that scrolls sideways: a wide one (three runs, long
  // names) never runs off the page.
  function table(head, rows, cls) {
    return h('div', { 'class': 'tablebox' }, [tableOnly(head, rows, cls)]);
  }
  function tableOnly(head, rows, cls) {
    return h('table', { 'class': cls || '' }, [
      h('thead', {}, [h('tr', {}, head.map(function (c) { return h('th', {}, [c]); }))]),
      h('tbody', {}, rows.map(function (r) {
        return h('tr', r.cls ? { 'class': r.cls } : {}, (r.cells || r).map(function (c) {
          return typeof c === 'object' && c !== null ? c : h('td', typeof c === 'number' ? { 'class': 'num' } : {}, [c === null ? '-' : c]);
        }));
      }))]);
  }
  var VERDICTS = { no_difference: '~ (no significant difference)', too_few_samples: 'too few samples',
                   unit_mismatch: 'units differ', no_baseline: 'no baseline', slower: 'SLOWER',
                   within_run_only: 'within-run noise only (single runs: no verdict)',
                   inconclusive_load: 'inconclusive: the machine was overloaded',
                   unconfirmed: 'unconfirmed: one run outside the history' + String.fromCharCode(8217) + 's range; run again (a verdict needs two consecutive runs)' };
  function verdictText(v) { return VERDICTS[v] || v || ''; }
  function verdictClass(v) { return v === 'slower' ? 'bad' : v === 'faster' ? 'good' : ''; }
  function cellText(v, head) {
    if (v === null || v === undefined) return '-';
    if (head === 'verdict') return verdictText(v);
    if (typeof v !== 'number') return v;
    if (/ vs |^CI /.test(head)) return pct(v);
    if (head === 'p') return v < 0.001 ? '<0.001' : v.toFixed(3);
    if (/%$/.test(head)) return PM + v.toFixed(1) + '%';
    return fmt(v);
  }

  // What the runs of these entries measured, for a title: a suite's
  // workloads, a run's code (one benchmark), else the runs' labels.
  function workloads(entries) {
    var names = [];
    entries.forEach(function (e) {
      var bs = e.run.benchmarks, groups = [];
      bs.forEach(function (b) { if (b.group && b.group !== 'run' && groups.indexOf(b.group) < 0) groups.push(b.group); });
      // (a watch's charts name the node it watched; a matrix's, whose
      // groups are its configurations, the run: `mb: +S 2: broker util')
      var w = e.run.subject || (e.run.matrix ? e.run.label : groups.length ? groups.join(', ') : bs.length === 1 ? bs[0].name : e.run.label);
      if (names.indexOf(w) < 0) names.push(w);
    });
    return names.join(' vs ');
  }

  // A benchmark named `work (time)', the metric time of the group work
  // (check's, one per metric), is titled `work: time' (then its unit):
  // what ran, then the measure, not `work (time) (us)'.
  // An amqp run's or a suite's benchmark (`sent', `consumer latency') is
  // a measure of its workload: `amqp: sent'. (NAME: a benchmark's, or a
  // series' or spectrum's that starts with one's.)
  function shown(name) {
    var b = null, kind = null;
    data.runs.forEach(function (r) {
      r.benchmarks.forEach(function (x) {
        if (!b && (x.name === name || name.indexOf(x.name + ' ') === 0)) { b = x; kind = r.kind; }
      });
    });
    // A measure the unit does not say (CPU time, a check's counts) is
    // named after what ran (`workload', from the document's fields):
    // `lists:seq(1,1000).: CPU time per iteration', `fib/cpu' as `fib:
    // CPU time per repetition', `work (cpu)' as `work: CPU time per
    // iteration' (#35: they were titled `(ns)' as wall-clock time).
    if (b && b.measure && name === b.name) return (b.workload || name) + ': ' + b.measure;
    if (!b || !b.group) return name;
    if (kind === 'check' && b.metric) return (b.workload || b.group) + ': ' + b.metric;
    if ((kind === 'amqp' || kind === 'suite') && name.indexOf(b.group) < 0) return b.group + ': ' + name;
    return name;
  }

  // The measure of the benchmark named NAME (its `measure'), or null.
  function measureOf(name) {
    var m = null;
    data.runs.forEach(function (r) { r.benchmarks.forEach(function (b) { if (m === null && b.name === name && b.measure) m = b.measure; }); });
    return m;
  }
  // A title or an axis with its unit: `CPU time per iteration (ns)'; a
  // count that names its unit already (`reductions per iteration') or
  // none at all is left as it is.
  function withUnit(text, measure, unit) {
    if (!unit || (measure && measure.indexOf(unit) === 0)) return text;
    return text + ' (' + unit + ')';
  }
  function axisLabel(measure, unit) {
    return measure ? withUnit(measure, measure, unit) : unit || 'value';
  }

  // A chart of a watched node's measures is titled with the node: `NODE:
  // name' (its benchmarks are the node's measures, not a workload).
  function about(entries, name) {
    var nodes = [];
    entries.forEach(function (e) { if (e.run.subject && nodes.indexOf(e.run.subject) < 0) nodes.push(e.run.subject); });
    return nodes.length ? nodes.join(' vs ') + ': ' + name : name;
  }

  // Groups items of every run by a key, keeping first-seen order.
  function byName(pick, key) {
    var order = [], map = {};
    key = key || function (item) { return item.name; };
    data.runs.forEach(function (run, ri) {
      pick(run).forEach(function (item) {
        var k = key(item);
        if (!map[k]) { map[k] = []; order.push(k); }
        map[k].push({ run: run, ri: ri, item: item });
      });
    });
    return order.map(function (k) { return { name: k, entries: map[k] }; });
  }
  function runName(run) {
    return run.label + (run.commit ? ' (' + run.commit.slice(0, 7) + (run.dirty ? '+' : '') + ')' : '');
  }

  // The Runs table's benchmarks: a matrix's in its configurations
  // ("1 in 2 configurations"), not one per benchmark and configuration.
  function countText(r) {
    var c = r.counted || { benchmarks: r.benchmarks.length };
    return isNum(c.configurations) ? c.benchmarks + ' in ' + c.configurations + (c.configurations === 1 ? ' configuration' : ' configurations')
                                   : c.benchmarks;
  }
  function overview() {
    var g = section('runs', 'Runs');
    if (data.history && data.history.runs.length > data.runs.length)
      g.appendChild(h('p', { 'class': 'note' }, ['The newest ' + data.runs.length + ' of ' + data.history.runs.length +
                                                 ' runs in detail; the trend covers all of them.']));
    g.appendChild(table(['', 'run', 'kind', 'started', 'commit', 'benchmarks', 'command'], data.runs.map(function (r, i) {
      return [h('td', {}, [h('i', { 'class': 'swatch', style: 'background:' + color(i) })]),
              h('td', {}, [r.label, r.partial ? h('span', { 'class': 'badge warning' }, ['partial']) : null]),
              r.kind, r.started_at, r.commit ? r.commit.slice(0, 10) + (r.dirty ? ' (dirty)' : '') : '-',
              countText(r), (r.command || []).join(' ')];
    })));
    // --ci: what ended each run (confident, or the budget spent first).
    data.runs.forEach(function (r) {
      if (r.stopped) g.appendChild(h('p', { 'class': 'note' }, [r.label + ': ' + r.stopped]));
    });
  }
  function comparison() {
    if (!data.compare) return;
    var c = data.compare;
    var g = section('compare', 'Comparison against ' + data.runs[0].label,
                    'Change of each later run against the first, its confidence interval and verdict.');
    var rows = c.rows.map(function (r) {
      var cls = r.indexOf('SLOWER') >= 0 || r.indexOf('slower') >= 0 ? 'bad' : r.indexOf('faster') >= 0 ? 'good' : '';
      // (a measure the unit does not say is named beside the benchmark: `(CPU time per iteration)')
      var m = typeof r[0] === 'string' ? measureOf(r[0]) : null;
      return { cls: cls, cells: r.map(function (v, i) {
        return h('td', typeof v === 'number' ? { 'class': 'num' } : {}, [cellText(v, c.header[i]) + (i === 0 && m ? ' (' + m + ')' : '')]);
      }) };
    });
    g.appendChild(table(c.header, rows, 'wide'));
    (c.notes || []).forEach(function (n) { g.appendChild(h('p', { 'class': 'note' }, [n])); });
  }

  // A check's paired verdicts, as its text table gives them (#35: the
  // report showed only the head's rounds): each benchmark and metric with
  // the medians of the base's and the head's rounds, the change, its
  // interval, the sign test's p and the verdict, with what a `~' could
  // have seen; then the method and the result.
  var CHECK_CLASS = { regressed: 'bad', improved: 'good', failed_head: 'bad' };
  // (below 0.01% a count's change is noise of the counting: none, as the command line says)
  function change(v) { return isNum(v) && Math.abs(v) < 1e-4 ? '0%' : pct(v); }
  function checks() {
    var runs = data.runs.filter(function (r) { return r.check && r.check.entries.length; });
    if (!runs.length) return;
    var g = section('check', 'Check: head against base', 'Paired rounds, base and head each in a fresh VM; change: the median of ' +
                    'the per-round ratios head/base, with its interval; p: the exact sign test on the rounds.');
    runs.forEach(function (run) {
      var es = run.check.entries;
      var conf = es[0].confidence;
      var head = ['benchmark', 'metric', 'base', 'head', 'change', (conf * 100).toFixed(conf * 100 % 1 ? 3 : 0).replace(/0+$/, '').replace(/[.]$/, '') + '% CI', 'p', 'verdict'];
      var rows = es.map(function (e, i) {
        var first = i === 0 || es[i - 1].benchmark !== e.benchmark;
        return { cls: (CHECK_CLASS[e.kind] || '') + ' check-entry',
                 cells: [first ? e.benchmark : '', e.metric + (e.gated ? ' (gated)' : ''), e.base === null ? '-' : e.base,
                         e.head === null ? '-' : e.head, change(e.change), e.ci ? '[' + change(e.ci[0]) + ', ' + change(e.ci[1]) + ']' : '-',
                         isNum(e.p) ? (e.p < 0.001 ? e.p.toExponential(1) : e.p.toFixed(3)) : '-',
                         h('td', { 'class': 'verdict', 'data-verdict': e.kind }, [e.verdict])] };
      });
      var box = h('div', { 'class': 'checkbox' }, [h('p', {}, [h('strong', {}, [run.check.lines[0] || run.label])]), table(head, rows, 'check-table')]);
      run.check.lines.slice(1).forEach(function (l) { box.appendChild(h('p', { 'class': 'note' }, [l])); });
      g.appendChild(box);
    });
  }

  // History: each benchmark's mean over the runs in order, its interval as
  // a band, the significant changes marked (red: worse, green: better).
  function history() {
    var hi = data.history;
    if (!hi) return;
    var g = section('trend', 'Trend over ' + hi.runs.length + ' runs',
                    'Ordered by ' + hi.order + '; band: ' + Math.round(hi.confidence * 100) + '% interval of the mean; ' +
                    'a triangle marks a significant change against the run before (red: worse, green: better).');
    var labels = hi.runs.map(function (r) { return r.commit ? r.commit.slice(0, 7) + (r.dirty ? '+' : '') : r.label; });
    var ticks = labels.map(function (l, i) { return [i, l]; });
    var every = Math.ceil(ticks.length / 8);
    var xAxis = { lo: -0.3, hi: labels.length - 0.7, map: function (v) { return v; },
                  ticks: ticks.filter(function (t, i) { return i % every === 0 || i === ticks.length - 1; }) };
    var sig = [];
    hi.trends.forEach(function (tr) {
      var flags = tr.changes.filter(function (c) { return c.verdict === 'faster' || c.verdict === 'slower'; }).map(function (c) {
        var p = tr.points.filter(function (q) { return q[0] === c.to; })[0];
        sig.push([tr.name, hi.runs[c.from].label, hi.runs[c.to].label, c]);
        var worse = c.verdict === 'slower';
        return { x: c.to, y: p[1], up: (c.change > 0), verdict: c.verdict, color: worse ? '#dc2626' : '#16a34a',
                 title: hi.runs[c.from].label + ' \u2192 ' + hi.runs[c.to].label + ': ' + pct(c.change) + ' (' + verdictText(c.verdict) + ', p=' + fmt(c.p, 3) + ')' };
      });
      // one run outside the history's range: listed (run again), not flagged
      tr.changes.filter(function (c) { return c.verdict === 'unconfirmed'; }).forEach(function (c) {
        sig.push([tr.name, hi.runs[c.from].label, hi.runs[c.to].label, c]);
      });
      // Means two decades apart or more (a run a thousand times slower) go
      // on a log axis, as a sweep's do: on a linear one the outlier would
      // flatten every other run onto the floor (or sit on it, unreadable).
      var means = tr.points.map(function (p) { return p[1]; }).filter(isNum);
      var pos = means.filter(function (v) { return v > 0; });
      var span = pos.length === means.length && pos.length > 1 ? log10(Math.max.apply(null, pos) / Math.min.apply(null, pos)) : 0;
      var yLog = span >= 2;
      // The title names the benchmark and its measure (the unit its axis shows).
      var trMeasure = measureOf(tr.name);
      lineChart(g, { title: withUnit(shown(tr.name), trMeasure, tr.unit) + ' by ' + (hi.order === 'commit' ? 'commit' : 'run'),
                     subtitle: function (unit) {
                       return (unit || 'no unit') + ', ' + betterText(tr.better) + '; each run' + String.fromCharCode(8217) +
                         's mean in ' + hi.order + ' order, band: ' + Math.round(hi.confidence * 100) + '% interval of that mean' +
                         (yLog ? '; log axis: the means span ' + span.toFixed(1) + ' decades' : '');
                     }, kind: 'trend', yLog: yLog,
                     xLabel: hi.order === 'commit' ? 'commit' : 'run', yLabel: tr.unit || trMeasure ? axisLabel(trMeasure, tr.unit) : tr.name,
                     yUnit: tr.unit, xAxis: xAxis,
                     series: [{ name: 'mean', color: COLORS[0], markers: true, cls: 'trend-line', flags: flags,
                                x: tr.points.map(function (p) { return p[0]; }), y: tr.points.map(function (p) { return p[1]; }),
                                band: { lo: tr.points.map(function (p) { return p[2]; }), hi: tr.points.map(function (p) { return p[3]; }) } }] });
    });
    if (sig.length) {
      g.appendChild(table(['benchmark', 'from', 'to', 'change', 'interval', 'p', 'verdict'], sig.map(function (x) {
        var c = x[3];
        return { cls: verdictClass(c.verdict), cells: [x[0], x[1], x[2], pct(c.change), c.ci ? '[' + pct(c.ci[0]) + ', ' + pct(c.ci[1]) + ']' : '-',
                                                      isNum(c.p) ? (c.p < 0.001 ? '<0.001' : c.p.toFixed(3)) : '-', verdictText(c.verdict)] };
      }), 'changes'));
    } else {
      g.appendChild(h('p', { 'class': 'muted' }, ['No significant change between consecutive runs.']));
    }
    // What a `~' between runs with repetitions could have seen (as compare says it).
    var could = [];
    hi.trends.forEach(function (tr) {
      tr.changes.forEach(function (c) {
        if (c.verdict === 'no_difference' && isNum(c.detectable))
          could.push(tr.name + ' ' + hi.runs[c.to].label + ' ' + detectableText(c.detectable));
      });
    });
    if (could.length)
      g.appendChild(h('p', { 'class': 'muted detectable' },
                      ['No significant difference between separately measured runs; from their own spread, each of these ' +
                       'changes is caught 80% of the time only beyond: ' + could.join('; ') + '.']));
  }
  // A detectable slowdown D both ways, as the command line prints it: the
  // speed-up it mirrors is 1/(1 + D) - 1 (never below -100%).
  function detectableText(d) {
    function p(f) { return f < 0.1 ? (100 * f).toFixed(1) + '%' : Math.round(100 * f) + '%'; }
    return '-' + p(d / (1 + d)) + '/+' + p(d);
  }

  // Configuration names (`+S 1 flavor=emu erl=/opt/... wrap=taskset -c 0')
  // without the parts all of them share (the same erl=/opt/... in every
  // name): what tells the chart's rows apart.
  function shortLabels(names) {
    var words = names.map(function (n) { return n.split(/ (?=[a-z_]+=)/); });
    var common = words.length > 1 ? words[0].filter(function (w) {
      return words.every(function (ws) { return ws.indexOf(w) >= 0; });
    }) : [];
    return words.map(function (ws, i) {
      var left = ws.filter(function (w) { return common.indexOf(w) < 0; }).join(' ');
      return left || names[i];
    });
  }

  // A matrix: the verdict table first, then every configuration of each
  // benchmark with its repetitions and interval.
  function matrices() {
    var any = data.runs.some(function (r) { return r.matrix; });
    if (!any) return;
    var g = section('matrix', 'Matrix', 'Each configuration against the baseline: change of the mean, its interval and the verdict (Welch); ' +
                    'then each benchmark with every configuration' + String.fromCharCode(8217) + 's repetitions (dots), mean and interval.');
    data.runs.forEach(function (run, ri) {
      var m = run.matrix;
      if (!m) return;
      var configs = m.configs.map(function (c) { return c.name; });
      var head = ['benchmark'].concat(configs);
      var rows = m.rows.map(function (row) {
        return [row.benchmark].concat(configs.map(function (cname) {
          var cell = row.cells.filter(function (c) { return c.config === cname; })[0];
          if (!cell) return h('td', {}, ['-']);
          var own = valueText(cell.mean, row.unit) + ' ' + relInterval(cell.mean, cell.ci);
          var v = cname === m.baseline ? 'baseline' : pct(cell.change) + ' ' + verdictText(cell.verdict);
          // what a `~' could have seen (on a line of its own: the cell stays as wide)
          var could = isNum(cell.detectable) ? [h('br'), h('span', { 'class': 'muted detectable' }, ['could have seen ' + detectableText(cell.detectable)])] : [];
          return h('td', { 'class': 'num ' + verdictClass(cell.verdict), 'data-verdict': cell.verdict || (cname === m.baseline ? 'baseline' : '') },
                   [own, h('br'), h('span', { 'class': 'muted' }, [v])].concat(could));
        }));
      });
      // what a value is (a fresh VM's mean, for CPU time its fastest sample)
      // (the document's, also when nothing was measured: a CPU matrix
      // interrupted before a repetition ended still says fastest samples)
      var values = m.values || m.rows.map(function (r) { return r.value || 'mean'; }).filter(function (v, i, a) { return a.indexOf(v) === i; });
      g.appendChild(h('div', { 'class': 'tablebox' }, [h('p', { 'class': 'muted' }, [run.label + ': baseline ' + m.baseline +
        '; each value the mean of fresh VMs' + String.fromCharCode(8217) + ' ' + values.join(' or ') + 's; ' +
        m.configs.map(function (c) { return c.name + ' ' + (c.status || '') + (isNum(c.schedulers_online) ? ' (' + c.schedulers_online + (c.schedulers_online === 1 ? ' scheduler)' : ' schedulers)') : ''); }).join(', ')]),
        table(head, rows, 'matrix-table')]));
      // A preset's scenarios (their loads differ) each get their own chart.
      var short = shortLabels(configs);
      m.rows.forEach(function (row) {
        var scenarios = [];
        row.cells.forEach(function (c) { if (scenarios.indexOf(c.scenario) < 0) scenarios.push(c.scenario); });
        scenarios.forEach(function (sc) {
          var cells = row.cells.filter(function (c) { return c.scenario === sc; });
          intervalChart(g, (sc ? sc + ': ' : '') + (row.measure ? (row.workload || row.benchmark) + ': ' + row.measure : row.benchmark) + ' ({unit}) per configuration',
                        run.label + ': ' + betterText(row.better) + '; dots: repetitions (one fresh VM' + String.fromCharCode(8217) + 's ' +
                        (row.value || 'mean') + ' each), bar: their mean, whiskers: ' +
                        (row.method || 'interval of the mean'), row.unit,
                        cells.map(function (c) {
                          var i = configs.indexOf(c.config);
                          var label = short[i] || c.config;
                          if (sc && label.indexOf(sc + ': ') === 0) label = label.slice(sc.length + 2);
                          return { label: label, samples: c.samples, mean: c.mean, ci: c.ci, color: color(i),
                                   note: c.config === m.baseline || (c.verdict == null && c.change == null) ? 'baseline' : pct(c.change) + ' ' + verdictText(c.verdict) };
                        }), 'matrix', row.measure);
        });
      });
    });
  }

  // A fitted coefficient: below 1e-9 it is zero within the fit's precision.
  function coef(v) { return Math.abs(v) < 1e-9 ? '0' : fmt(v, 3); }
  // Concurrency: throughput at each level (dots: repetitions), the fitted
  // Universal Scalability Law (dashed) and linear scaling (dotted); then
  // speedup and efficiency against the smallest level.
  function scaling() {
    var any = data.runs.some(function (r) { return r.scaling.length; });
    if (!any) return;
    var g = section('scaling', 'Scaling', 'Throughput against concurrency with the Universal Scalability Law fitted to every point: ' +
                    'X(N) = \u03bbN / (1 + \u03c3(N\u22121) + \u03baN(N\u22121)); \u03c3 contention, \u03ba coherency.');
    // "1 worker", "2 workers": the axis names a plural.
    function countOf(n, axis) {
      if (n !== '1') return n + ' ' + axis;
      return n + ' ' + (/(s|x|ch|sh)es$/.test(axis) ? axis.slice(0, -2) : /[^s]s$/.test(axis) ? axis.slice(0, -1) : axis);
    }
    data.runs.forEach(function (run, ri) {
      run.scaling.forEach(function (sc) {
        var fit = sc.fit;
        var maxN = Math.max.apply(null, sc.means.map(function (m) { return m[0]; }));
        var sub = sc.unit + ' against ' + sc.axis + '; dots: repetitions, line: their mean, band: ' + (sc.method || 'interval of the mean');
        if (fit) {
          sub += '; ' + (fit.model === 'amdahl' ? 'Amdahl (two levels cannot separate contention from coherency): ' : 'USL: ') +
            '\u03c3 = ' + coef(fit.sigma) + ', \u03ba = ' + coef(fit.kappa) + ', \u03bb = ' + fmt(fit.lambda) +
            ', R\u00b2 = ' + fmt(fit.r2, 3) + '; ' +
            (isNum(fit.peak_n) && fit.peak_n <= 4 * maxN ? 'predicted peak ' + valueText(fit.peak_x, sc.unit) + ' at ' + countOf(fmt(fit.peak_n, 3), sc.axis)
                                                         : 'no peak within ' + 4 * maxN + ' ' + sc.axis);
        }
        var series = [{ name: 'repetitions', color: color(ri), scatter: true, cls: 'usl-point', x: sc.points.map(function (p) { return p[0]; }), y: sc.points.map(function (p) { return p[1]; }) },
                      { name: 'mean', color: color(ri), markers: true, cls: 'scaling-mean', x: sc.means.map(function (p) { return p[0]; }), y: sc.means.map(function (p) { return p[1]; }),
                        band: { lo: sc.means.map(function (p) { return p[2]; }), hi: sc.means.map(function (p) { return p[3]; }) } }];
        if (fit) {
          series.push({ name: 'USL fit', color: '#111827', dash: true, cls: 'usl-fit', width: 2, x: fit.curve.map(function (p) { return p[0]; }), y: fit.curve.map(function (p) { return p[1]; }) });
        }
        var card = lineChart(g, { title: run.label + ': ' + sc.title, subtitle: sub, kind: 'scaling', xLabel: sc.axis, yLabel: sc.unit,
                                  yFromZero: true, xInt: true, series: series });
        if (!card) return;
        var row = h('div', { 'class': 'grid' });
        card.appendChild(row);
        var x = sc.speedup.map(function (p) { return p[0]; });
        // Titled like the chart above (what ran, the measure), so each
        // stands alone; the subtitle says what the ratio is of.
        var what = run.label + ': ' + sc.title.replace(/throughput against .*$/, '');
        var base = countOf(fmt(x[0]), sc.axis);
        lineChart(row, { title: what + 'throughput speedup against ' + sc.axis, kind: 'speedup',
                         subtitle: 'throughput (' + sc.unit + ') at each level / at ' + base + '; dashed: linear', xLabel: sc.axis, yLabel: 'speedup', yFromZero: true, xInt: true, width: 280, height: 190,
                         series: [{ name: 'speedup', color: color(ri), markers: true, x: x, y: sc.speedup.map(function (p) { return p[1]; }) },
                                  { name: 'ideal', color: '#999', dash: true, x: x, y: x.map(function (v) { return v / x[0]; }) }] });
        lineChart(row, { title: what + 'throughput efficiency against ' + sc.axis, kind: 'efficiency',
                         subtitle: 'speedup / (' + sc.axis + ' / ' + fmt(x[0]) + '); 1 is linear scaling', xLabel: sc.axis, yLabel: 'efficiency', yFromZero: true, xInt: true, width: 280, height: 190,
                         series: [{ name: 'efficiency', color: color(ri), markers: true, x: x, y: sc.efficiency.map(function (p) { return p[1]; }) }] });
      });
    });
  }

  // Parameter sweeps: a line per run and series over the parameter, the
  // interval the document gives as a band. A parameter with two values is
  // levels, not a range: each series' points at those values (side by
  // side), the interval as whiskers, no line through values never measured.
  function sweeps() {
    var groups = byName(function (r) { return r.sweeps; }, function (sw) {
      return (sw.workload ? sw.workload + ': ' : '') + withUnit(sw.measure || sw.metric, sw.measure, sw.unit) + ' against ' + sw.param;
    });
    if (!groups.length) return;
    var g = section('sweeps', 'Parameter sweeps', 'Mean of each point and the interval its document gives. The x axis is ' +
                    'logarithmic when the parameter\u2019s positive values span two decades or more (a 0 sits one decade below, ' +
                    'past a marked break of the axis); it is ordinal (the measured values evenly spaced, a tick at each) when ' +
                    'neighbouring values would otherwise crowd together; a parameter with two values is drawn as points at those values.');
    groups.forEach(function (grp) {
      var first = grp.entries[0].item, k = 0, series = [];
      var cat = grp.entries.some(function (e) { return e.item.categorical; });
      grp.entries.forEach(function (e) {
        e.item.series.forEach(function (sr) {
          var name = (data.runs.length > 1 ? e.run.label + (sr.name ? ': ' : '') : '') + sr.name;
          series.push({ name: name || first.measure || first.metric, color: color(k), markers: true, cls: 'sweep-line', noLine: cat, whiskers: cat,
                        x: sr.points.map(function (p) { return p[0]; }), y: sr.points.map(function (p) { return p[1]; }),
                        band: { lo: sr.points.map(function (p) { return p[2]; }), hi: sr.points.map(function (p) { return p[3]; }) } });
          k++;
        });
      });
      var xAxis = null;
      var ord = !cat && grp.entries.some(function (e) { return e.item.ordinal; });
      if (ord) {
        // Unevenly spread values: evenly spaced in their order, a tick at
        // each measured value and none between (no value is invented).
        var ovals = [];
        series.forEach(function (sr) { sr.x.forEach(function (v) { if (ovals.indexOf(v) < 0) ovals.push(v); }); });
        ovals.sort(function (a, b) { return a - b; });
        xAxis = { lo: 0, hi: ovals.length - 1, map: function (v) { return ovals.indexOf(v); },
                  ticks: ovals.map(function (v, i) { return [i, fmt(v)]; }), ordinal: true };
      } else if (cat) {
        // The measured values, evenly spaced, each series beside the next.
        var vals = [];
        series.forEach(function (sr) { sr.x.forEach(function (v) { if (vals.indexOf(v) < 0) vals.push(v); }); });
        vals.sort(function (a, b) { return a - b; });
        xAxis = { lo: -0.5, hi: vals.length - 0.5, map: function (v) { return vals.indexOf(v); },
                  ticks: vals.map(function (v, i) { return [i, String(v)]; }), categorical: true };
        var width = Math.min(60, 300 / vals.length) ;
        series.forEach(function (sr, i) { sr.offset = series.length > 1 ? (i - (series.length - 1) / 2) * width / series.length : 0; });
      }
      var ys = [];
      series.forEach(function (sr) { ys = ys.concat(sr.y.filter(function (v) { return v > 0; })); });
      var yLog = ys.length > 1 && Math.max.apply(null, ys) / Math.min.apply(null, ys) > 100;
      var method = first.method || 'interval of the mean';
      lineChart(g, { title: grp.name, kind: 'sweep', xAxis: xAxis, distinct: true,
                     subtitle: function (unit) {
                       return unit + ', ' + betterText(first.better) + '; ' + (cat ? 'whiskers' : 'band') + ': ' + method +
                         (cat ? '; ' + first.param + ' is drawn at its ' + xAxis.ticks.length + ' measured values' : '') +
                         (ord ? '; ' + first.param + ' on an ordinal axis: its ' + xAxis.ticks.length + ' measured values evenly spaced' : '');
                     },
                     xLabel: first.param, yLabel: withUnit(first.measure || first.metric, first.measure, first.unit), yUnit: first.unit,
                     yLog: yLog, xLog: !cat && grp.entries.some(function (e) { return e.item.log; }), series: series });
    });
  }

  // Latency: the percentile spectrum, x stretched as 1/(1-p) on a log scale
  // (HdrHistogram's plot), so each tick is one more nine.
  function latency() {
    var groups = byName(function (r) { return r.latency; });
    if (!groups.length) return;
    var g = section('latency', 'Latency percentiles', 'Percentile spectrum from the recorded histograms and percentiles: ' +
                    'x axis 1/(1\u2212p) on a log scale (50%, 90%, 99%, 99.9%, 99.99%).');
    var ticks = [[50, '50%'], [90, '90%'], [99, '99%'], [99.9, '99.9%'], [99.99, '99.99%']];
    var xmap = function (p) { return log10(1 / Math.max(1e-5, 1 - p / 100)); };
    var xAxis = { lo: xmap(50) - 0.05, hi: xmap(99.99) + 0.05, map: xmap, ticks: ticks.map(function (t) { return [xmap(t[0]), t[1]]; }) };
    groups.forEach(function (grp) {
      var first = grp.entries[0].item;
      var ys = [];
      grp.entries.forEach(function (e) { e.item.points.forEach(function (p) { ys.push(p[1]); }); });
      // Latency on a log axis, always: the median and the tail of one run
      // differ by orders of magnitude, and a linear axis puts p50 on the floor.
      lineChart(g, { title: shown(grp.name) + ': latency percentile spectrum', kind: 'latency', distinct: true,
                     subtitle: function (unit) {
                       return unit + grp.entries.map(function (e) {
                         return '; ' + (data.runs.length > 1 ? e.run.label + ': ' : '') + 'max ' + valueText(e.item.max, e.item.unit) +
                           (isNum(e.item.count) ? ', ' + fmt(e.item.count) + ' values' : '');
                       }).join('');
                     },
                     xLabel: 'percentile', yLabel: 'latency (' + first.unit + ')', yUnit: first.unit, xAxis: xAxis, yLog: true,
                     series: grp.entries.map(function (e) {
                       return { name: e.run.label, color: color(e.ri), markers: true, cls: 'spectrum',
                                x: e.item.points.map(function (p) { return p[0]; }), y: e.item.points.map(function (p) { return p[1]; }) };
                     }) });
    });
  }

  function results() {
    var groups = byName(function (r) { return r.benchmarks.filter(function (b) { return !b.claimed; }); });
    if (!groups.length) return;
    var g = section('results', 'Results', 'Mean of each benchmark with its confidence interval (error bar).');
    groups.forEach(function (grp) {
      var first = grp.entries[0].item;
      // A benchmark that failed has no statistics: nothing to draw.
      var measured = grp.entries.filter(function (e) { return isNum(e.item.stats.mean); });
      if (!measured.length) return;
      barChart(g, about(measured, shown(grp.name)), measured.map(function (e) {
        return { label: sideLabel(e.run) + (e.run.partial ? '*' : ''), value: e.item.stats.mean, ci: e.item.ci, color: color(e.ri) };
      }), first.unit, grp.entries.every(function (e) { return e.run.kind === 'watch'; }) ? null : first.better, first.ci_method, first.measure);
    });
    distributions(groups);
  }
  // A check's samples are its head's rounds (the base's are in its
  // verdict table): its bars and points say so.
  function sideLabel(run) { return run.kind === 'check' ? run.label + ' (head)' : run.label; }
  // A histogram needs samples to have a shape: from 20 on; fewer are
  // drawn as the points themselves with the mean and its interval.
  var MIN_HIST = 20;
  function distributions(groups) {
    var d = section('distributions', 'Sample distributions', 'Histograms from ' + MIN_HIST + ' samples on; fewer samples are shown as points with the mean and its interval.');
    groups.forEach(function (grp) {
      var entries = grp.entries.filter(function (e) { return e.item.samples.length > 1; });
      if (!entries.length) return;
      var unit = grp.entries[0].item.unit, measure = grp.entries[0].item.measure;
      if (entries.every(function (e) { return e.item.samples.length >= MIN_HIST; })) {
        distChart(d, withUnit(about(entries, shown(grp.name)), measure, unit), unit, entries.map(function (e) {
          return { label: sideLabel(e.run), samples: e.item.samples, stats: e.item.stats, color: color(e.ri) };
        }), measure);
      } else {
        intervalChart(d, about(entries, shown(grp.name)) + ' ({unit})', 'samples (n < ' + MIN_HIST + '), mean and ' + (grp.entries[0].item.ci_method || 'interval of the mean'), unit, entries.map(function (e) {
          return { label: sideLabel(e.run), samples: e.item.samples, mean: e.item.stats.mean, ci: e.item.ci, color: color(e.ri) };
        }), 'points', measure);
      }
    });
  }

  // The series people look at first; the rest of the telemetry is drawn
  // on demand under a closed <details>, which keeps long reports fast.
  var PRIMARY = /^rates[.]|^util$|^util_dirty|^run_queue$|^processes$|^memory[.]total$|reductions_per_s|scheduler_busy_cores|steal_pct|machine_cpu_pct|throttled|monitor_wall_pct|monitor_cost_pct/;
  function series() {
    var groups = byName(function (r) { return r.series; });
    if (!groups.length) return;
    var g = section('timeline', 'Over time', 'Telemetry and per-second series; shaded: when a finding fired. ' +
                    'Long series are reduced to first/min/max/last per pixel column.');
    // The chart of a group: its options for lineChart.
    var optsOf = function (grp) {
      var tele = grp.entries[0].item.source === 'telemetry' || grp.entries[0].item.source === 'broker';
      var marks = [];
      if (tele) grp.entries.forEach(function (e) {
        (e.run.marks || []).forEach(function (m) {
          marks.push({ from: m.from, to: m.to, color: SEVERITY[m.severity] || '#f59e0b', title: e.run.label + ': ' + m.title });
        });
      });
      var unit = grp.entries[0].item.unit || '';
      // Repetitions are separate lines over the seconds of each, never
      // stitched onto one time axis; a trailing partial second is left out
      // (the model counts it), not drawn as a fall.
      var reps = grp.entries.some(function (e) { return isNum(e.item.rep); });
      var partial = 0;
      grp.entries.forEach(function (e) { partial += e.item.partial || 0; });
      var sub = reps ? 'each repetition its own line, seconds from its start' +
        (partial ? '; ' + partial + ' trailing partial second' + (partial > 1 ? 's' : '') + ' (shorter than a second) left out' : '')
        : partial ? 'the last interval, shorter than the others (the recording stopped within it), is left out' : null;
      // Shares and counts from zero (a 51% utilisation is not drawn as a
      // swing); counts on whole ticks.
      // A benchmark's samples over time are titled and labelled with its
      // measure (`lists:seq(1,1000).: CPU time per iteration (ns)').
      var bench = grp.entries[0].item.benchmark, measure = bench ? measureOf(bench) : null;
      // (the charts of one clock share its time axis with its heatmaps)
      var clock = reps ? null : clockOf(grp.entries[0].item);
      if (clock && grp.entries.some(function (e) { return clockOf(e.item) !== clock; })) clock = null;
      return { title: tele ? teleTitle(grp)
                                                 : measure ? withUnit(shown(bench), measure, unit)
                                                 : reps ? repTitle(grp) : shown(grp.name),
                                     subtitle: sub, xLabel: reps ? 'second of the repetition' : clockLabel(clock),
                                     xAxis: clock ? timeAxis(data.runs, clock) : null,
                                     yLabel: measure ? axisLabel(measure, unit) : unit || grp.name, yUnit: unit,
                                     kind: 'timeseries', marks: marks, xInt: reps, distinct: true,
                                     yFromZero: unit === '%' || unit === 'count' || unit === 'cores', yInt: unit === 'count',
                                     series: grp.entries.map(function (e, i) {
        var n = e.item.y.filter(isNum).length;
        var name = reps ? (data.runs.length > 1 ? e.run.label + ' ' : '') + 'rep ' + (isNum(e.item.rep) ? e.item.rep : '?') + ' (' + n + ' s)'
                        : e.run.label + ' (' + n + ' points)';
        return { name: name, color: color(reps ? i : e.ri), x: e.item.t, y: e.item.y, breakAtNull: tele, cls: reps ? 'series rep-line' : null,
                 rep: e.item.rep };
      }) };
    };
    var draw = function (parent, grp) {
      var tele = grp.entries[0].item.source === 'telemetry' || grp.entries[0].item.source === 'broker';
      var card = lineChart(parent, optsOf(grp));
      // Findings about this benchmark as a whole, under its series.
      if (card && !tele) {
        grp.entries.forEach(function (e) {
          e.run.findings.filter(function (f) { return f.benchmark && (grp.name === f.benchmark || grp.name.indexOf(f.benchmark + ' ') === 0); }).forEach(function (f) {
            card.appendChild(h('div', { 'class': 'finding-note ' + (f.severity || 'info') }, [f.severity + ': ' + (f.title || f.id) + ' (' + f.evidence + ')']));
          });
        });
      }
    };
    var flat = function (grp) {
      var vals = [];
      grp.entries.forEach(function (e) { e.item.y.forEach(function (v) { if (typeof v === 'number') vals.push(v); }); });
      return vals.every(function (v) { return v === vals[0]; });
    };
    // The benchmarks' own series (the load, per-second rates and
    // latencies) first, then the telemetry that explains them.
    var own = groups.filter(function (grp) { return grp.entries[0].item.source !== 'telemetry'; });
    var primary = own.concat(groups.filter(function (grp) {
      return grp.entries[0].item.source === 'telemetry' && PRIMARY.test(grp.name) && !flat(grp);
    }));
    var rest = groups.filter(function (grp) { return primary.indexOf(grp) < 0; });
    // Before any is drawn: the left margin of each time axis, the room the
    // widest y tick label of all its charts needs (those drawn on demand
    // too), so every chart and heatmap on it has its plot at the same x.
    groups.forEach(function (grp) {
      var o = optsOf(grp);
      if (o.xAxis && prepareLine(o)) o.xAxis.left = Math.max(o.xAxis.left, yMargin(lineYAxis(o)));
    });
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
  // A benchmark's per-second series of its repetitions (message_load's
  // `series.goodput', `series.latency_mean_us') is titled with what ran
  // and what the series counts, `message_load: goodput', `message_load:
  // latency mean', not with the key's path (#35); the y axis has the unit.
  function repTitle(grp) {
    var source = grp.entries[0].item.source;
    if (!source || grp.name.indexOf(source + ' ') !== 0) return shown(grp.name);
    var key = grp.name.slice(source.length + 1).split('.');
    return source + ': ' + key[key.length - 1].replace(/_(us|ns|ms|pct|bytes)$/, '').replace(/_/g, ' ');
  }
  // One rule for every telemetry chart: `WHAT RAN: VM telemetry SERIES'.
  // A benchmark's own rate (`rates.NAME') is about that benchmark: `NAME:
  // VM telemetry rates' (it read `NAME: VM telemetry rates.NAME').
  function teleTitle(grp) {
    var source = grp.entries[0].item.source, m = /^rates[.](.+)$/.exec(grp.name);
    if (source !== 'telemetry') return workloads(grp.entries) + ': ' + grp.name;
    var own = m && grp.entries.every(function (e) { return e.run.benchmarks.some(function (b) { return b.name === m[1]; }); });
    return own ? m[1] + ': VM telemetry rates' : workloads(grp.entries) + ': VM telemetry ' + grp.name;
  }
  function heatmaps() {
    var any = data.runs.some(function (r) { return r.heatmaps.some(function (hm) { return !hm.broker; }); });
    if (!any) return;
    var g = section('schedulers', 'Scheduler utilisation over time');
    data.runs.forEach(function (r) { r.heatmaps.forEach(function (hm) { if (!hm.broker) heatmap(g, r, hm); }); });
  }

  // The environment as a difference: what differs between runs (and can
  // explain a change) first, the rest folded.
  function env() {
    if (!data.env.length) return;
    var multi = data.runs.length > 1;
    var diff = data.env.filter(function (e) { return e.explains; });
    var g = section('env', 'Environment', multi ? diff.length + ' setting(s) differ between the runs; the rest, the same in every run ' +
                    'or changing on every run (memory in use, load), is folded below.' : null);
    var head = ['key'].concat(data.runs.map(function (r) { return r.label; }));
    var rowOf = function (e) {
      return { cls: e.differs ? 'differs' : '', cells: [e.key].concat(e.values) };
    };
    if (multi && diff.length) g.appendChild(table(head, diff.map(rowOf), 'env env-diff'));
    var rest = data.env.filter(function (e) { return !(multi && e.explains); });
    var more = h('details', { 'class': 'more env-rest' }, [h('summary', {}, [(multi ? 'the other ' : 'all ') + rest.length + ' settings']),
                                                           table(head, rest.map(rowOf), 'env')]);
    g.appendChild(more);
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
    [overview, history, comparison, checks, matrices, scaling, sweeps, latency, results, series, heatmaps, env, findings].forEach(function (f) {
      try { f(); } catch (e) { noteError(f.name + ': ' + (e && e.message ? e.message : e)); }
    });
  } catch (e) {
    noteError('report: ' + (e && e.message ? e.message : e));
  }
  document.body.setAttribute('data-charts-rendered', String(rendered));
  document.body.setAttribute('data-errors', errors.join(' | '));
  // What the other scripts of the page (watch.js) draw with.
  window.beamlabReport = { data: data, h: h, section: section, table: table, lineChart: lineChart, color: color,
                           fmt: fmt, SEVERITY: SEVERITY, noteError: noteError,
                           charted: function () { document.body.setAttribute('data-charts-rendered', String(rendered)); } };
})();
