// beamlab report: the processes of a watched node (model:
// beamlab_report_watch), drawn with report.js's charts
// (window.beamlabReport). For each run with top lists: a chart per measure
// (message queue length, process memory, reductions per second, ETS table
// memory) with a line for each process or table that led it at some
// sample, shaded from where the findings about that measure started to
// the sample that raised them; a table of every process listed
// over the recording; and, folded, each sample's table as the live view
// showed it (R, Q, M: among the top by reductions, queue, memory).
// The page inlines this file in a <script> element: it must never contain
// the characters that would close one.
(function () {
  'use strict';
  var B = window.beamlabReport;
  if (!B) return;
  try {
    var runs = B.data.runs.filter(function (r) { return r.processes; });
    if (!runs.length) return;
    var g = B.section('processes', 'Processes', 'The processes that led each measure at some sample, ' +
                      'one line each (a gap: not among the top processes then); shaded: when a finding fired. ' +
                      'The tables below list every process the watch showed.');
    // Before the environment and the findings.
    var sec = g.parentNode, anchor = document.getElementById('env') || document.getElementById('findings');
    if (anchor) sec.parentNode.insertBefore(sec, anchor);
    runs.forEach(function (r) {
      var p = r.processes;
      // Every title names the node watched (and the run, beside others).
      var who = (runs.length > 1 ? r.label + ', ' : '') + (r.subject || r.label) + ': ';
      p.charts.forEach(function (c) {
        if (!c.lines.length) return;
        var marks = (c.marks || []).map(function (m) {
          return { from: m.from, to: m.to, color: B.SEVERITY[m.severity] || '#f59e0b', title: m.title };
        });
        B.lineChart(g, { title: who + c.title + ' (' + c.unit + ')',
                         // observed on the watched node: a rate with its unit, no "better"
                         xLabel: 'seconds', yLabel: c.unit || c.title, yUnit: c.unit, kind: 'processes', marks: marks,
                         series: c.lines.map(function (l, i) { return { name: l.label, color: B.color(i), x: p.t, y: l.y }; }) });
      });
      var card = B.h('figure', { 'class': 'card wide', 'data-kind': 'process-table' },
                     [B.h('figcaption', {}, [who + 'processes over the recording'])]);
      card.appendChild(B.table(['pid', 'name or initial call', 'current function', 'max queue', 'max memory',
                                'mean reductions/s', 'samples'],
                               p.summary.map(function (row) {
                                 return [row[0], row[1], row[2], row[3], B.fmt(row[4]), B.fmt(row[5]), row[6]];
                               }), 'processes'));
      var more = B.h('details', { 'class': 'more' }, [B.h('summary', {}, ['Each sample\'s table (' + p.samples.length + ')'])]);
      p.samples.forEach(function (smp) {
        more.appendChild(B.h('h4', {}, [B.fmt(smp.t) + ' s']));
        more.appendChild(B.table(['top', 'reductions/s', 'queue', 'memory', 'pid', 'name or initial call', 'current function'],
                                 smp.rows.map(function (row) {
                                   return [row[0], B.fmt(row[1]), row[2], B.fmt(row[3]), row[4], row[5], row[6]];
                                 }), 'processes'));
      });
      card.appendChild(more);
      g.appendChild(card);
    });
    B.charted();
  } catch (e) {
    B.noteError('processes: ' + (e && e.message ? e.message : e));
  }
})();
