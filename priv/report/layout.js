// beamlab report: checks the drawn page the way a reader would look at it
// and records what is wrong on <body data-layout="..."> (empty: nothing),
// for the browser tests and for anyone who opens the page's DOM:
// - a point or band outside its chart's plot (the axis does not cover it);
// - a label cut off at its chart's edge, or an axis' label over its ticks;
// - a table wider than the page that cannot scroll; in the doctor's
//   section any table wider than its box, scrolling or not (its columns
//   are the figures a reader compares side by side: one cut off or behind
//   a scrollbar is a table that does not fit);
// - a title with a word broken across lines;
// - a chart's card narrower than what is in it;
// - a chart without a title, an axis with ticks but no label (its unit),
//   a rate labelled `1/s' (a rate says what it counts: iterations/s);
// - a band, whisker or error bar whose card does not say how its
//   interval was made (every method's words name an `interval').
// Runs last, after report.js, flame.js and watch.js have drawn. Reads
// layout only; changes nothing but the attribute.
// The page inlines this file in a <script> element: it must never contain
// the characters that would close one.
(function () {
  'use strict';
  var problems = [];
  var SLACK = 1.5;
  function name(el) {
    var fig = el.closest('figure');
    var cap = fig && fig.querySelector('figcaption');
    return cap ? cap.textContent : (el.id || el.tagName.toLowerCase());
  }
  function inside(r, box) {
    return r.left >= box.left - SLACK && r.right <= box.right + SLACK && r.top >= box.top - SLACK && r.bottom <= box.bottom + SLACK;
  }
  function note(msg) { if (problems.indexOf(msg) < 0) problems.push(msg); }
  function scroller(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return p;
    }
    return null;
  }
  function scrolls(el) { return scroller(el) !== null; }
  try {
    Array.prototype.forEach.call(document.querySelectorAll('svg.chart'), function (svg) {
      var outer = svg.getBoundingClientRect();
      if (!outer.width) return;  // in a closed <details>: not drawn yet
      var plot = svg.querySelector('rect.plot');
      var pr = plot ? plot.getBoundingClientRect() : outer;
      Array.prototype.forEach.call(svg.querySelectorAll('circle, path.ci-band, path.errorbar, path.series, path.sweep-line, ' +
                                                        'path.trend-line, path.spectrum, path.usl-fit, path.scaling-mean, path.marker, .finding-mark rect'), function (el) {
        var r = el.getBoundingClientRect();
        if (!r.width && !r.height) return;
        if (!inside(r, pr)) note(name(svg) + ': a ' + (el.getAttribute('class') || el.tagName) + ' outside its axis');
      });
      Array.prototype.forEach.call(svg.querySelectorAll('text'), function (el) {
        if (!el.textContent) return;
        if (!inside(el.getBoundingClientRect(), outer)) note(name(svg) + ': label "' + el.textContent + '" cut off');
      });
      var fig = svg.closest('figure');
      var cap = fig && fig.querySelector('figcaption');
      if (!cap || !cap.textContent.trim()) note('a chart without a title');
      ['x', 'y'].forEach(function (ax) {
        if (!svg.querySelector('text.tick[data-axis="' + ax + '"]')) return;
        var lab = svg.querySelector('text.' + ax + '-label');
        if (!lab || !lab.textContent.trim()) note(name(svg) + ': its ' + ax + ' axis has no label');
        else if (/^1\/s$|\(1\/s\)/.test(lab.textContent)) note(name(svg) + ': a rate labelled 1/s');
        // An axis' label never runs into its tick labels (#35: a long
        // tick, 25.275M, over a y axis' `bytes').
        if (lab) {
          var lr = lab.getBoundingClientRect();
          Array.prototype.forEach.call(svg.querySelectorAll('text.tick[data-axis="' + ax + '"]'), function (t) {
            var tr = t.getBoundingClientRect();
            if (tr.left < lr.right && lr.left < tr.right && tr.top < lr.bottom && lr.top < tr.bottom)
              note(name(svg) + ': tick "' + t.textContent + '" over the label "' + lab.textContent + '"');
          });
        }
      });
      if (fig && svg.querySelector('path.ci-band, path.errorbar')) {
        var said = Array.prototype.map.call(fig.querySelectorAll('.muted'), function (m) { return m.textContent; }).join(' ');
        if (!/interval/.test(said)) note(name(svg) + ': a band or error bar without its method');
      }
    });
    var page = document.documentElement.clientWidth;
    Array.prototype.forEach.call(document.querySelectorAll('table'), function (t) {
      var r = t.getBoundingClientRect();
      if (!r.width) return;
      if (t.closest('#doctor')) {
        var s = scroller(t), card = t.closest('figure, section');
        var cr = card.getBoundingClientRect();
        if ((s && s.scrollWidth > s.clientWidth + SLACK) || r.right > Math.min(page, cr.right) + SLACK)
          note('a table (' + name(t) + ') is wider than the page or its card');
        return;
      }
      if (scrolls(t)) return;
      var box = t.parentElement.getBoundingClientRect();
      if (r.right > Math.min(page, box.right) + SLACK) note('a table (' + name(t) + ') overflows the page');
    });
    Array.prototype.forEach.call(document.querySelectorAll('figcaption, figure .muted'), function (c) {
      if (!c.getBoundingClientRect().width) return;
      var range = document.createRange();
      var walker = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
      for (var n = walker.nextNode(); n; n = walker.nextNode()) {
        var re = /\S+/g, m;
        while ((m = re.exec(n.data)) !== null) {
          range.setStart(n, m.index);
          range.setEnd(n, m.index + m[0].length);
          var lines = {};
          Array.prototype.forEach.call(range.getClientRects(), function (q) { if (q.width > 0) lines[Math.round(q.top)] = true; });
          if (Object.keys(lines).length > 1) note('"' + m[0] + '" broken across lines in "' + c.textContent.slice(0, 60) + '"');
        }
      }
    });
    Array.prototype.forEach.call(document.querySelectorAll('figure.card'), function (f) {
      if (f.getBoundingClientRect().width && f.scrollWidth > f.clientWidth + SLACK && !scrolls(f)) note(name(f) + ': wider than its card');
    });
  } catch (e) {
    note('layout check: ' + (e && e.message ? e.message : e));
  }
  document.body.setAttribute('data-layout', problems.join(' | '));
})();
