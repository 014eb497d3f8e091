// beamlab report: flame graphs of profiles (model: beamlab_report_flame).
// For every profile an interactive flame graph (click a frame to zoom into
// it, click the root to zoom out, search with highlight and the matched
// share, a tooltip with samples and share); for each profile paired with
// an earlier one (the same benchmarks, the same --label, or configurations
// of one matrix) a differential flame graph: the later profile's stacks,
// each frame coloured by the change of its share of its own profile's
// samples in percentage points (red: hotter, blue: cooler), and the table
// of the functions whose share changed most.
(function () {
  'use strict';
  var SVGNS = 'http://www.w3.org/2000/svg';
  var CAT = { erlang: '#65a30d', emulator: '#ea580c', kernel: '#64748b', harness: '#9333ea', thread: '#94a3b8' };
  // Frames narrower than MINW pixels (0.25% of the width) are not drawn.
  var ROW = 17, W = 1200, MINW = 3;
  function noteError(msg) {
    var b = document.body, old = b.getAttribute('data-errors') || '';
    b.setAttribute('data-errors', old ? old + ' | ' + msg : String(msg));
  }
  function countChart() {
    var b = document.body;
    b.setAttribute('data-charts-rendered', String((parseInt(b.getAttribute('data-charts-rendered'), 10) || 0) + 1));
  }
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (kids || []).forEach(function (k) { if (k !== null && k !== undefined) e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k))); });
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  function pc(v) { return (100 * v).toFixed(2) + '%'; }
  // A frame's text in CHARS characters: the whole name when it fits; an
  // Erlang function (module:function/arity) that does not is named by its
  // function/arity (#35: `rabbit_que..' named only a module's prefix);
  // else cut with `..'. The frame's <title> holds the whole name.
  function frameText(name, chars) {
    if (name.length <= chars) return name;
    var m = /^[^:;]+:(.+\/[0-9]+)$/.exec(name);
    var text = m ? m[1] : name;
    return text.length <= chars ? text : text.slice(0, Math.max(0, chars - 2)) + '..';
  }
  // Profile labels without the words every profile of the page shares
  // (`erl=/opt/beamlab-otp/27/bin/erl' in each matrix configuration's
  // name): what tells them apart, in captions and table heads; the whole
  // label is their title.
  function shortLabels(labels) {
    var words = labels.map(function (l) { return String(l).split(/ (?=[a-z_]+=)/); });
    var common = words.length > 1 ? words[0].filter(function (w) {
      return words.every(function (ws) { return ws.indexOf(w) >= 0; });
    }) : [];
    return words.map(function (ws, i) {
      var left = ws.filter(function (w) { return common.indexOf(w) < 0; }).join(' ');
      return left || labels[i];
    });
  }
  function pp(v) { return (v > 0 ? '+' : v < 0 ? '\u2212' : '\u00b1') + Math.abs(v).toFixed(2) + ' pp'; }
  // The call tree of folded stacks: {name, value, children: {name: node}}.
  function tree(stacks) {
    var root = { name: 'all', value: 0, children: {}, depth: 0 };
    stacks.forEach(function (sc) {
      var frames = String(sc[0]).split(';'), n = sc[1], node = root;
      root.value += n;
      frames.forEach(function (f) {
        var c = node.children[f];
        if (!c) { c = node.children[f] = { name: f, value: 0, children: {}, depth: node.depth + 1, parent: node }; }
        c.value += n;
        node = c;
      });
    });
    return root;
  }
  function kids(node) {
    return Object.keys(node.children).sort().map(function (k) { return node.children[k]; });
  }
  // Share of every path in a tree, keyed by the path, for the differential graph.
  function shares(node, prefix, total, out) {
    kids(node).forEach(function (c) {
      var p = prefix + ';' + c.name;
      out[p] = c.value / total;
      shares(c, p, total, out);
    });
    return out;
  }
  function pathOf(node) {
    var p = '';
    while (node && node.parent) { p = ';' + node.name + p; node = node.parent; }
    return p;
  }
  // Diverging scale on the change in percentage points, square root so
  // small changes stay visible beside the largest.
  function diffColor(d, maxAbs) {
    var t = maxAbs > 0 ? Math.sqrt(Math.min(1, Math.abs(d) / maxAbs)) : 0;
    var c = Math.round(235 - 160 * t);
    return d > 0 ? 'rgb(235,' + c + ',' + c + ')' : d < 0 ? 'rgb(' + c + ',' + c + ',235)' : 'rgb(229,231,235)';
  }
  function flame(parent, prof, opts) {
    var root = tree(prof.stacks), total = root.value || 1;
    var names = prof.names || {};
    var box = el('div', { 'class': 'flamebox' });
    var input = el('input', { type: 'search', placeholder: 'search frames (substring)' });
    var matched = el('span', { 'class': 'matched' });
    var bar = el('div', { 'class': 'flamebar' }, ['Search: ', input, matched,
      el('span', { 'class': 'muted' }, ['  click a frame to zoom, click all to zoom out'])]);
    var hgt = ROW + 4;
    var svg = sv('svg', { 'class': 'flame', width: W, height: hgt, viewBox: '0 0 ' + W + ' ' + hgt, 'data-zoom': 'all' });
    var tip = el('div', { 'class': 'flametip' });
    box.appendChild(bar); box.appendChild(svg); box.appendChild(tip);
    parent.appendChild(box);
    var bt = opts.before ? tree(opts.before.stacks) : null;
    var before = bt ? shares(bt, '', bt.value || 1, {}) : null;
    // Change of a frame's share, in percentage points.
    function change(node) { return 100 * (node.value / total - (before[pathOf(node)] || 0)); }
    // The scale's end: the table's largest change (the model's `scale'),
    // one number for both; a frame beyond it is drawn at the end.
    var maxAbs = opts.scale || 0;
    function colorOf(node) {
      if (node.depth === 0) return CAT.thread;
      if (before) return diffColor(change(node), maxAbs);
      if (node.depth === 1) return CAT.thread;
      return CAT[names[node.name]] || '#f59e0b';
    }
    var zoom = root;
    // Rows that hold a frame wide enough to draw at the current zoom.
    function visDepth(node, w) {
      var d = node.depth;
      kids(node).forEach(function (c) {
        var cw = w * c.value / node.value;
        if (cw >= MINW) d = Math.max(d, visDepth(c, cw));
      });
      return d;
    }
    function draw() {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      hgt = (visDepth(zoom, W) + 1) * ROW + 4;
      svg.setAttribute('height', hgt);
      svg.setAttribute('viewBox', '0 0 ' + W + ' ' + hgt);
      // The zoomed frame fills the width; its ancestors are drawn full width.
      var anc = [], a = zoom;
      while (a) { anc.unshift(a); a = a.parent; }
      anc.forEach(function (n) { place(n, 0, W, true); });
      layout(zoom, 0, W);
      function layout(node, x, w) {
        var cx = x;
        kids(node).forEach(function (c) {
          var cw = w * c.value / node.value;
          if (cw >= MINW) { place(c, cx, cw, false); layout(c, cx, cw); }
          cx += cw;
        });
      }
      search();
    }
    function place(node, x, w, isAnc) {
      var y = hgt - (node.depth + 1) * ROW;
      var g = sv('g', {});
      var r = sv('rect', { 'class': 'frame', x: x.toFixed(2), y: y, width: Math.max(0.5, w - 0.5).toFixed(2), height: ROW - 1,
                           fill: colorOf(node), 'data-name': node.name, rx: 2 });
      if (before) r.setAttribute('data-change', change(node).toFixed(3));
      if (isAnc && node !== zoom) r.setAttribute('opacity', '0.6');
      g.appendChild(r);
      if (w > 30) {
        var t = sv('text', { x: (x + 3).toFixed(2), y: y + ROW - 5 });
        var chars = Math.floor((w - 6) / 6.6);
        t.textContent = frameText(node.name, chars);
        g.appendChild(t);
      }
      var info = node.name + ': ' + node.value + ' samples, ' + pc(node.value / total) + ' of all';
      if (before) {
        var b = before[pathOf(node)] || 0;
        info += ' (before ' + pc(b) + ', change ' + pp(change(node)) + ')';
      }
      var title = sv('title', {}); title.textContent = info; g.appendChild(title);
      g.addEventListener('mousemove', function (ev) {
        tip.textContent = info; tip.style.display = 'block';
        tip.style.left = (ev.clientX + 12) + 'px'; tip.style.top = (ev.clientY + 12) + 'px';
      });
      g.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
      g.addEventListener('click', function () {
        zoom = node === zoom && node.parent ? node.parent : node;
        svg.setAttribute('data-zoom', zoom.name);
        draw();
      });
      svg.appendChild(g);
    }
    function search() {
      var q = input.value.toLowerCase(), hit = 0;
      var rects = svg.querySelectorAll('rect.frame');
      for (var i = 0; i < rects.length; i++) {
        var m = q !== '' && rects[i].getAttribute('data-name').toLowerCase().indexOf(q) >= 0;
        if (m) rects[i].setAttribute('class', 'frame match'); else rects[i].setAttribute('class', 'frame');
      }
      if (q === '') { matched.textContent = ''; return; }
      // Matched share: samples under the outermost matching frames.
      (function walk(n) {
        kids(n).forEach(function (c) { if (c.name.toLowerCase().indexOf(q) >= 0) hit += c.value; else walk(c); });
      })(root);
      matched.textContent = 'matched ' + pc(hit / total) + ' of samples';
    }
    input.addEventListener('input', search);
    draw();
    countChart();
  }
  function legend() {
    var items = [['Erlang', CAT.erlang], ['emulator (C)', CAT.emulator], ['kernel', CAT.kernel], ['beamlab harness', CAT.harness], ['thread type', CAT.thread]];
    return el('div', { 'class': 'legend' }, items.map(function (it) {
      return el('span', {}, [el('i', { style: 'background:' + it[1] }), it[0]]);
    }));
  }
  // The differential's scale: both ends at the largest change of the
  // table below it (a frame that changed more is drawn at the end).
  function diffLegend(maxAbs) {
    var stops = [-1, -0.5, 0, 0.5, 1].map(function (f) { return diffColor(f * maxAbs, maxAbs); });
    return el('div', { 'class': 'legend diff-legend' }, [
      el('span', { 'class': 'cooler' }, ['cooler ' + pp(-maxAbs)]),
      el('span', { 'class': 'ramp' }, [el('span', { style: 'background:linear-gradient(90deg,' + stops.join(',') + ')' })]),
      el('span', { 'class': 'hotter' }, [pp(maxAbs) + ' hotter']),
      el('span', { 'class': 'muted' }, [' change of each frame' + String.fromCharCode(8217) + 's share of its profile' + String.fromCharCode(8217) + 's samples, in percentage points']),
      // (a div: a legend's spans do not wrap)
      el('div', { 'class': 'muted' }, ['Both ends: the largest change in the table below; a frame that changed more is drawn at the end.'])]);
  }
  function shareLine(counts, total) {
    return Object.keys(counts || {}).filter(function (k) { return counts[k] > 0; }).map(function (k) {
      return k + ' ' + (100 * counts[k] / (total || 1)).toFixed(1) + '%';
    }).join(', ');
  }
  function topTable(p) {
    var rows = (p.top || []).map(function (f) {
      return el('tr', {}, [el('td', {}, [f.name]), el('td', {}, [f.category]),
        el('td', { 'class': 'num' }, [pc(f.self / (p.samples || 1))]), el('td', { 'class': 'num' }, [pc(f.total / (p.samples || 1))]),
        el('td', {}, [f.note || ''])]);
    });
    // In a box that scrolls sideways: long function names never push the
    // table off the page.
    return el('div', { 'class': 'tablebox' }, [
      el('table', {}, [el('thead', {}, [el('tr', {}, ['function', 'category', 'self', 'total', 'note'].map(function (c) { return el('th', {}, [c]); }))]),
                       el('tbody', {}, rows)])]);
  }
  // The functions whose share changed most: on the stack (total) and as
  // the leaf (self), before and after, and the change of the first.
  function diffTable(rows, base, now, baseFull, nowFull) {
    var head = [['function'], ['total ' + base, baseFull], ['total ' + now, nowFull], ['change'], ['self ' + base, baseFull], ['self ' + now, nowFull]];
    return el('div', { 'class': 'tablebox' }, [el('table', { 'class': 'flame-diff-table' }, [
      el('thead', {}, [el('tr', {}, head.map(function (c) { return el('th', c[1] ? { title: c[1] } : {}, [c[0]]); }))]),
      el('tbody', {}, rows.map(function (r) {
        return el('tr', { 'class': r.change > 0 ? 'hotter' : 'cooler', 'data-function': r['function'], 'data-change': String(r.change) }, [
          el('td', {}, [r['function']]), el('td', { 'class': 'num' }, [r.before.toFixed(2) + '%']),
          el('td', { 'class': 'num' }, [r.after.toFixed(2) + '%']), el('td', { 'class': 'num change' }, [pp(r.change)]),
          el('td', { 'class': 'num' }, [r.self_before.toFixed(2) + '%']), el('td', { 'class': 'num' }, [r.self_after.toFixed(2) + '%'])]);
      }))])]);
  }
  try {
    var data = JSON.parse(document.getElementById('beamlab-data').textContent);
    var profiles = data.profiles || [];
    if (!profiles.length) return;
    var app = document.getElementById('app');
    var sec = el('section', { id: 'profiles' }, [el('h2', {}, ['Profiles']),
      el('p', { 'class': 'muted' }, ['Flame graphs of the recorded call stacks (root at the bottom, width = share of samples). ' +
        'Each profile starts with its thread types. A later profile of the same benchmark (or --label, or matrix) ' +
        'also gets a differential flame graph against the first.'])]);
    var envSec = document.getElementById('env');
    if (envSec) app.insertBefore(sec, envSec); else app.appendChild(sec);
    var diffsOf = {};
    (data.diffs || []).forEach(function (d) { diffsOf[d['new']] = d; });
    var n = 0;
    var short = shortLabels(profiles.map(function (p) { return p.label; }));
    profiles.forEach(function (p, i) {
      var card = el('figure', { 'class': 'card flamecard', 'data-kind': 'flame' }, [el('figcaption', { title: p.label }, [short[i] + (p.detail ? ': ' + p.detail : '')]),
        el('div', { 'class': 'muted' }, [p.samples + ' samples; ' + shareLine(p.categories, p.samples) +
          '; threads: ' + shareLine(p.threads, p.samples)]), legend()]);
      sec.appendChild(card);
      flame(card, p, {});
      card.appendChild(el('details', { 'class': 'more' }, [el('summary', {}, ['top functions']), topTable(p)]));
      var d = diffsOf[i];
      if (!d) return;
      var base = profiles[d.base], bs = short[d.base], ps = short[i];
      n += 1;
      var dcard = el('figure', { 'class': 'card flamecard diff', id: 'flame-diff-' + n, 'data-kind': 'flame-diff' }, [
        el('figcaption', { title: p.label + ' against ' + base.label }, ['Differential: ' + ps + ' against ' + bs + (p.detail ? ' (' + p.detail + ')' : '')]),
        el('div', { 'class': 'muted' }, ['Stacks of ' + ps + ' (' + p.samples + ' samples) against ' + bs + ' (' + base.samples +
          ' samples); frames only in ' + bs + ' are not drawn (the table lists them).'])]);
      sec.appendChild(dcard);
      flame(dcard, p, { before: base, scale: d.scale });
      dcard.insertBefore(diffLegend(d.scale), dcard.querySelector('.flamebox'));
      dcard.appendChild(el('p', { 'class': 'muted' }, ['Functions whose share of samples changed most (total: on the stack; self: as the leaf):']));
      dcard.appendChild(diffTable(d.table, bs, ps, base.label, p.label));
    });
    // The cards exist only now: a link to one (#flame-diff-1) scrolls here.
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (target) target.scrollIntoView();
  } catch (e) {
    noteError('flame: ' + (e && e.message ? e.message : e));
  }
})();
