// beamlab report: a doctor run (model: beamlab_report_doctor), drawn with
// report.js's helpers (window.beamlabReport). First the recommendation
// and the findings, then the scaling curve per scheduler count (capacity
// of every repetition as points, the medians of capacity and goodput as
// lines, the USL fit dashed), microstate accounting stacked per
// configuration, and the remedies ranked with their ratios to the default
// and their intervals (a forest of intervals on a log axis, 1 = no change;
// Bonferroni-corrected over all remedy x figure comparisons, the caption
// says at which confidence). A watched node (doctor --node): each
// scheduler's utilisation and its thread's migrations between CPUs.
// The page inlines this file in a <script> element: it must never contain
// the characters that would close one.
(function () {
  'use strict';
  var B = window.beamlabReport;
  if (!B) return;
  // "1 scheduler", "2 schedulers", "1.5 schedulers".
  function count(n, one, many) { return B.fmt(n) + ' ' + (B.fmt(n) === '1' ? one : many || one + 's'); }
  // How the ranking's intervals were made, from its rows.
  function intervals(list) {
    var m = list[0];
    if (!m || typeof m.confidence !== 'number') return '95% interval';
    var c = (100 * m.confidence).toFixed(m.confidence >= 0.99 ? 2 : 0) + '% interval';
    return m.correction === 'bonferroni' ? c + ', Bonferroni over ' + count(m.comparisons, 'comparison') : c;
  }
  // A ranking of remedies: one row per remedy (flags, with its
  // repetitions and why it was tried beneath), its verdict, and one cell
  // per figure: the ratio to the default with its 95% interval drawn on a
  // log axis shared by the card (1 = no change) and written under it.
  // Narrow cells that wrap, so the table fits the page at any width.
  function remediesCard(g, title, kind, list, cols, notes) {
    var all = [];
    list.forEach(function (m) { cols.forEach(function (c) {
      (m[c[0]] || []).forEach(function (v) { if (typeof v === 'number' && v > 0) all.push(v); });
    }); });
    var lo = Math.min.apply(null, all.concat([0.5])), hi = Math.max.apply(null, all.concat([2]));
    var pos = function (v) { return (100 * (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo))).toFixed(2) + '%'; };
    var cell = function (t) {
      if (!t || typeof t[0] !== 'number') return B.h('td', { 'class': 'ratio' }, ['-']);
      var kids = [B.h('span', { 'class': 'one', style: 'left:' + pos(1) })];
      if (typeof t[1] === 'number') {
        kids.push(B.h('span', { 'class': 'ci', style: 'left:' + pos(t[1]) + ';width:calc(' + pos(t[2]) + ' - ' + pos(t[1]) + ')' }));
      }
      kids.push(B.h('span', { 'class': 'pt', style: 'left:' + pos(t[0]) }));
      return B.h('td', { 'class': 'ratio' }, [B.h('span', { 'class': 'forest' }, kids),
        B.h('span', { 'class': 'x' }, [t[0].toFixed(2) + 'x']), ' ',
        B.h('span', { 'class': 'iv' }, [typeof t[1] === 'number' ? '(' + t[1].toFixed(2) + '..' + t[2].toFixed(2) + ')' : '(no interval)'])]);
    };
    var card = B.h('figure', { 'class': 'card wide', 'data-kind': kind },
                   [B.h('figcaption', {}, [title + ' (ratio to the default, ' + intervals(list) + ', log axis ' + B.fmt(lo) + '..' + B.fmt(hi) + ')'])]);
    if (list.length) {
      card.appendChild(B.table(['#', 'flags', 'verdict'].concat(cols.map(function (c) { return c[1]; })),
        list.map(function (m, i) {
          var flags = B.h('td', { 'class': 'flags' }, [B.h('code', {}, [m.name]),
            B.h('span', { 'class': 'why' }, [count(m.n, 'repetition') + (m.why.length ? '; ' + m.why.join(', ') : '')])]);
          return { cells: [String(i + 1), flags, m.verdict].concat(cols.map(function (c) { return cell(m[c[0]]); })),
                   cls: m.verdict === 'better' ? 'good' : m.verdict === 'worse' ? 'bad' : '' };
        }), 'remedies'));
    }
    notes.forEach(function (n) { card.appendChild(B.h('p', { 'class': 'note' }, [n])); });
    g.appendChild(card);
  }
  try {
    var runs = B.data.runs.filter(function (r) { return r.doctor; });
    if (!runs.length) return;
    var g = B.section('doctor', 'Doctor', 'Why this machine runs the BEAM slower: the recommendation, the findings, ' +
                      'the scaling curve, microstate accounting and the remedies measured against the default.');
    // First on the page.
    var sec = g.parentNode, first = sec.parentNode.firstElementChild;
    if (first && first !== sec) sec.parentNode.insertBefore(sec, first);
    runs.forEach(function (r) {
      var d = r.doctor, pre = runs.length > 1 ? r.label + ': ' : '';
      var rec = d.recommendation || 'no recommendation (nothing was measured)';
      g.appendChild(B.h('div', { 'class': 'recommendation' + (/^(start |put in )/.test(rec) ? '' : ' keep'),
                                 'data-kind': 'recommendation' }, [pre + rec + (d.partial ? ' (partial: interrupted)' : '')]));
      d.findings.forEach(function (f) {
        g.appendChild(B.h('div', { 'class': 'finding ' + f.severity, 'data-kind': 'doctor-finding', 'data-id': f.id }, [
          B.h('strong', {}, [f.title]), B.h('span', { 'class': 'badge ' + f.severity }, [f.severity]),
          B.h('span', { 'class': 'badge' }, ['confidence ' + (f.confidence || '?')]),
          B.h('p', {}, [f.evidence]), B.h('p', { 'class': 'advice' }, [f.advice])]));
      });
      var c = d.curve;
      if (c.schedulers.length) {
        var series = [{ name: 'capacity, each repetition', color: B.color(0), scatter: true, cls: 'usl-point',
                        x: c.points.map(function (p) { return p[0]; }), y: c.points.map(function (p) { return p[1]; }) },
                      { name: 'capacity (median)', color: B.color(0), markers: true, x: c.schedulers, y: c.capacity },
                      { name: 'message-load goodput (median)', color: B.color(1), markers: true, x: c.schedulers, y: c.goodput }];
        var sub = 'the probe in fresh VMs at +S N:N';
        if (c.fit) {
          series.push({ name: 'USL fit', color: '#111827', dash: true, cls: 'usl-fit', width: 2,
                        x: c.fit.curve.map(function (p) { return p[0]; }), y: c.fit.curve.map(function (p) { return p[1]; }) });
          sub += '; USL: \u03c3 = ' + B.fmt(c.fit.sigma) + ', \u03ba = ' + B.fmt(c.fit.kappa) +
                 (c.fit.peak_n !== null && c.fit.peak_n <= 4096 ? ', peak at ' + count(c.fit.peak_n, 'scheduler') : ', no peak within reach');
        }
        B.lineChart(g, { title: pre + 'Scaling per scheduler count', subtitle: sub, kind: 'doctor-curve',
                         xLabel: 'schedulers', yLabel: 'msg/s', xInt: true, yFromZero: true, series: series });
      }
      var msaccCard = function (m, what) {
        if (!m || !m.rows.length) return;
        var card = B.h('figure', { 'class': 'card wide', 'data-kind': 'doctor-msacc' },
                       [B.h('figcaption', {}, [pre + 'Microstate accounting of the schedulers ' + what])]);
        var legend = B.h('div', { 'class': 'legend' }, m.states.map(function (s, i) {
          return B.h('span', {}, [B.h('i', { style: 'background:' + B.color(i) }), s]);
        }));
        card.appendChild(legend);
        card.appendChild(B.table(['configuration', 'share of the schedulers\' time'], m.rows.map(function (row) {
          var bar = B.h('div', { 'class': 'stack' }, row.shares.map(function (v, i) {
            return B.h('span', { style: 'width:' + (100 * (v || 0)).toFixed(2) + '%;background:' + B.color(i),
                                 title: m.states[i] + ' ' + (100 * (v || 0)).toFixed(1) + '%' });
          }));
          return [row.label, B.h('td', {}, [bar])];
        }), 'msacc'));
        g.appendChild(card);
      };
      msaccCard(d.msacc, d.node ? 'while the node worked' : 'under the load (below capacity)');
      msaccCard(d.capacity_msacc, 'under the saturating load (capacity)');
      if (d.node) {
        var n = d.node, x = n.schedulers;
        B.lineChart(g, { title: pre + 'Each scheduler of ' + n.name + ' while it worked',
                         subtitle: 'busy share of its time (scheduler_wall_time); run queue ' +
                                   (typeof n.run_queue_mean === 'number' ? B.fmt(n.run_queue_mean) + ' on average' : 'unknown'),
                         kind: 'doctor-node-utilisation', xLabel: 'scheduler', yLabel: 'busy %', xInt: true, yFromZero: true,
                         series: [{ name: 'utilisation', color: B.color(0), markers: true, noLine: true, x: x, y: n.utilisation }] });
        if (n.migrations.length) {
          B.lineChart(g, { title: pre + 'Migrations of each scheduler thread between CPUs',
                           subtitle: 'how often the kernel moved it, per second (se.nr_migrations); all threads: ' +
                                     (typeof n.migrations_per_s === 'number' ? B.fmt(n.migrations_per_s) + '/s' : 'unknown'),
                           kind: 'doctor-node-migrations', xLabel: 'scheduler', yLabel: 'migrations/s', xInt: true, yFromZero: true,
                           series: [{ name: 'migrations/s', color: B.color(1), markers: true, noLine: true, x: x.slice(0, n.migrations.length),
                                      y: n.migrations }] });
        }
      }
      if (d.remedies.length) {
        remediesCard(g, pre + 'Remedies against the default, best first', 'doctor-remedies', d.remedies,
                     [['goodput', 'goodput'], ['capacity', 'capacity'], ['latency_p99', 'p99 latency'],
                      ['cpu_per_msg', 'CPU per message']], []);
      }
      if (d.target) {
        var t = d.target, notes = [];
        if (t.already_in_effect.length) notes.push('Left out, the broker already runs with them: ' + t.already_in_effect.join('; ') + '.');
        t.failed.forEach(function (f) {
          notes.push(f.name + ': ' + (f.runs - f.ok_runs) + ' of ' + count(f.runs, 'repetition') + ' failed: ' + f.errors.join('; '));
        });
        if (t.remedies.length || notes.length) {
          remediesCard(g, pre + 'Remedies on the broker (' + t.kind + ', a fresh broker per repetition loaded by \'' +
                       t.load_command.join(' ') + '\'), best first', 'doctor-target-remedies', t.remedies,
                       [['throughput', 'throughput'], ['latency_p99', 'p99 latency'], ['broker_cpu_per_msg', 'broker CPU per message']],
                       notes);
        }
      }
    });
    B.charted();
  } catch (e) {
    B.noteError('doctor: ' + (e && e.message ? e.message : e));
  }
})();
