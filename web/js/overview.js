// The overview: mode, leader, mirror, and at a glance what waits, what is
// stuck, what lint finds, what was deleted and how much of the cap is used.
import { h, api, table, when, badge, setTitle, errorBox, ruleLink } from './util.js';

const svgNS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

// barChart draws buckets [{start, applied, dryRun}] as stacked bars.
function barChart(title, buckets, label, span) {
  const w = 600;
  const hgt = 90;
  const maxv = Math.max(1, ...buckets.map((b) => b.applied + b.dryRun));
  const bw = w / buckets.length;
  const bars = [];
  let applied = 0;
  let dry = 0;
  buckets.forEach((b, i) => {
    applied += b.applied;
    dry += b.dryRun;
    const ha = (b.applied / maxv) * (hgt - 4);
    const hd = (b.dryRun / maxv) * (hgt - 4);
    const x = i * bw + 0.5;
    const tip = `${label(b.start)}: ${b.applied} deleted, ${b.dryRun} in dry-run`;
    if (b.applied > 0) bars.push(svg('rect', { x, y: hgt - ha, width: Math.max(bw - 1, 1), height: ha, class: 'applied' }, svg('title', {}, tip)));
    if (b.dryRun > 0) bars.push(svg('rect', { x, y: hgt - ha - hd, width: Math.max(bw - 1, 1), height: hd, class: 'dryrun' }, svg('title', {}, tip)));
  });
  const chart = svg('svg', { viewBox: `0 0 ${w} ${hgt}`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': `${title}: ${applied} deleted, ${dry} decided in dry-run` }, ...bars);
  return h('div', { class: 'chart card' },
    h('h3', { text: title }),
    h('div', {}, h('span', { class: 'big', text: String(applied) }), ' deleted',
      dry > 0 ? h('span', { class: 'muted', text: ` · ${dry} in dry-run` }) : null),
    chart,
    h('div', { class: 'legend axis' }, h('span', { text: span + ' ago' }), h('span', { text: 'peak ' + maxv + ' per bar' }), h('span', { text: 'now' })));
}

const hhmm = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

export async function overviewPage(view, ctx) {
  setTitle('');
  view.append(h('h1', { text: 'Overview' }));
  const [st, ov, stuck, lint] = await Promise.allSettled([
    api('/status'), api('/overview'), api('/stuck'), api('/lint?limit=1'),
  ]);
  if (!ctx.isCurrent()) return;
  if (st.status === 'rejected') throw st.reason;
  const s = st.value;
  const e = s.enforcement;
  const le = s.leaderElection;
  const cards = h('div', { class: 'cards' });
  view.append(cards);

  // Mode and pause.
  const mode = h('div', { class: 'card', id: 'card-mode' }, h('h3', { text: 'Mode' }));
  if (e) {
    mode.append(h('div', { class: 'big ' + (e.dryRun ? 'warn' : 'ok'), text: e.dryRun ? 'dry-run' : 'enforcing' }));
    if (e.paused) {
      mode.append(h('div', { class: 'bad' }, 'paused: ', (e.pausedBy || []).join(', ')),
        e.pausedReason ? h('div', { class: 'muted', text: e.pausedReason }) : null,
        e.pausedSince ? h('div', { class: 'muted' }, 'since ', when(e.pausedSince)) : null);
    } else {
      mode.append(h('div', { class: 'muted', text: e.dryRun ? 'decides and records, writes nothing' : 'not paused' }));
    }
  } else {
    mode.append(h('div', { class: 'muted', text: 'no controllers' }));
  }
  cards.append(mode);

  // Leader.
  const leader = h('div', { class: 'card', id: 'card-leader' }, h('h3', { text: 'Leader' }));
  if (le && le.enabled) {
    leader.append(h('div', { class: 'big', text: s.leader ? 'this instance' : 'follower' }),
      h('div', { class: 'muted' }, 'holder ', h('code', { text: le.holder || 'none' })),
      le.holderSince ? h('div', { class: 'muted' }, 'since ', when(le.holderSince)) : null);
  } else {
    leader.append(h('div', { class: 'big', text: 'no election' }), h('div', { class: 'muted', text: (le && le.reason) || '' }));
  }
  cards.append(leader);

  // Mirror.
  const unsynced = s.resources.filter((r) => !r.synced);
  cards.append(h('div', { class: 'card', id: 'card-mirror' }, h('h3', { text: 'Mirror' }),
    h('div', { class: 'big ' + (s.synced ? 'ok' : 'bad'), text: s.synced ? 'synced' : 'syncing' }),
    h('div', { class: 'muted', text: `${s.objects.toLocaleString()} objects in ${s.resources.length} resources` }),
    unsynced.length ? h('div', { class: 'bad', text: 'not live: ' + unsynced.map((r) => r.resource).join(', ') }) : null,
    h('div', { class: 'muted' }, 'up ', when(s.startedAt).textContent.replace(' ago', ''), ' · ', s.version)));

  // Pending by controller.
  const pend = h('div', { class: 'card', id: 'card-pending' }, h('h3', { text: 'Pending' }));
  if (ov.status === 'fulfilled') {
    const byC = ov.value.pendingByController;
    const total = Object.values(byC).reduce((a, b) => a + b, 0);
    pend.append(h('a', { class: 'big', href: '#/pending', text: String(total) }),
      h('ul', {}, Object.keys(byC).sort().map((c) => h('li', {}, h('a', { href: '#/pending?controller=' + c, text: c }), ': ' + byC[c]))));
  } else {
    pend.append(errorBox(ov.reason));
  }
  cards.append(pend);

  // Stuck.
  const stk = h('div', { class: 'card', id: 'card-stuck' }, h('h3', { text: 'Stuck deletions' }));
  if (stuck.status === 'fulfilled') {
    const n = stuck.value.items.length;
    const ns = stuck.value.items.filter((i) => i.state === 'namespace-terminating').length;
    stk.append(h('a', { class: 'big ' + (n ? 'bad' : 'ok'), href: '#/stuck', text: n + (stuck.value.truncated ? '+' : '') }),
      h('div', { class: 'muted', text: ns ? `${ns} namespace${ns > 1 ? 's' : ''} Terminating` : 'older than --stuck-after' }));
  } else {
    stk.append(errorBox(stuck.reason));
  }
  cards.append(stk);

  // Lint.
  const lc = h('div', { class: 'card', id: 'card-lint' }, h('h3', { text: 'Lint findings' }));
  if (lint.status === 'fulfilled') {
    const counts = lint.value.counts || {};
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    lc.append(h('a', { class: 'big ' + (total ? 'warn' : 'ok'), href: '#/lint', text: String(total) }),
      h('ul', {}, Object.keys(counts).sort().filter((r) => counts[r] > 0)
        .map((r) => h('li', {}, h('a', { href: '#/lint?rule=' + r, title: ruleLink(r).title || '', text: r }), ': ' + counts[r]))),
      lint.value.countsAt ? h('div', { class: 'muted' }, 'counted ', when(lint.value.countsAt)) : null);
  } else {
    lc.append(errorBox(lint.reason));
  }
  cards.append(lc);

  // Blast radius.
  if (e) {
    const cap = e.maxDeletionsPerMinute;
    const used = e.writesLastMinute;
    const pct = cap > 0 ? Math.min(100, (used / cap) * 100) : 0;
    const bar = h('div', { class: 'bar' + (pct >= 80 ? ' high' : '') }, h('div', {}));
    bar.firstChild.style.width = pct + '%';
    cards.append(h('div', { class: 'card', id: 'card-blast' }, h('h3', { text: 'Blast-radius budget' }),
      h('div', { class: 'big', text: cap > 0 ? `${used} / ${cap}` : `${used} / ∞` }),
      cap > 0 ? bar : null,
      h('div', { class: 'muted', text: `writes in the last minute; resume ${e.blastRadiusResume}` })));
  }

  // Deletions.
  view.append(h('h2', { text: 'Deletions' }));
  if (ov.status === 'fulfilled') {
    const d = ov.value.deletions;
    view.append(h('div', { class: 'charts', id: 'deletions' },
      barChart('Last hour, per minute', d.lastHour, hhmm, '60 min'),
      barChart('Last day, per hour', d.lastDay, hhmm, '24 h')),
    h('div', { class: 'legend' }, h('span', {}, h('span', { class: 'swatch applied' }), 'deleted'),
      h('span', {}, h('span', { class: 'swatch dryrun' }), 'decided in dry-run')));
  } else {
    view.append(errorBox(ov.reason));
  }

  // Controllers.
  if (s.controllers.length) {
    view.append(h('h2', { text: 'Controller passes' }), table([
      { title: 'controller', cell: (c) => c.name },
      { title: 'last pass', cell: (c) => when(c.lastPass) },
      { title: 'state', cell: (c) => c.skipping ? badge('skipping: ' + c.skipReason, 'bad') : badge('running', 'ok') },
      { title: 'detail', cell: (c) => c.skipDetail || '' },
      { title: 'skipped passes', class: 'num', cell: (c) => String(c.skippedPasses) },
    ], s.controllers));
  }

  // Resources, most objects first; those without objects folded.
  const res = s.resources.slice().sort((a, b) => b.objects - a.objects || a.resource.localeCompare(b.resource));
  const cols = [
    { title: 'kind', cell: (r) => r.kind },
    { title: 'resource', cell: (r) => r.group ? r.resource + '.' + r.group : r.resource },
    { title: 'version', cell: (r) => r.version },
    { title: 'scope', cell: (r) => r.namespaced ? 'namespaced' : 'cluster' },
    { title: 'live', cell: (r) => r.synced ? badge('synced', 'ok') : badge('not live', 'bad') },
    { title: 'objects', class: 'num', cell: (r) => r.objects.toLocaleString() },
  ];
  const shown = res.filter((r) => r.objects > 0 || !r.synced);
  const rest = res.filter((r) => !(r.objects > 0 || !r.synced));
  view.append(h('h2', { text: 'Mirrored resources' }), table(cols, shown, { id: 'resources', empty: 'no objects mirrored' }));
  if (rest.length) {
    view.append(h('details', {}, h('summary', { text: `${rest.length} more resources without objects` }), table(cols, rest)));
  }
}
