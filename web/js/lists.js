// The Pending and Audit tables: filters the API applies, paging by the
// API's cursor (never everything at once), links to objects, downloads.
import { h, api, qs, table, when, objLink, filterForm, badge, csv, download, setTitle, errorBox, targetText, go, paramsObject } from './util.js';

const controllers = ['ownergc', 'podgc', 'ttl', 'svgc'];
const outcomes = ['applied', 'dry-run', 'failed', 'conflict', 'not-found', 'skipped'];
const pageSize = 50;
const downloadCap = 50000; // rows a download reads at most, 1,000 a request

// rangeTime turns a relative "1h" or "30m" into an RFC 3339 time that long
// ago; anything else goes to the API as typed, which refuses what it cannot
// read.
function rangeTime(v) {
  const m = /^(\d+)([smhd])$/.exec(v || '');
  if (!m) return v || '';
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[m[2]];
  return new Date(Date.now() - Number(m[1]) * unit * 1000).toISOString();
}

const pendingFields = [
  { name: 'controller', label: 'controller', options: controllers },
  { name: 'namespace', label: 'namespace' },
  { name: 'kind', label: 'kind' },
];

export async function pendingPage(view, ctx) {
  setTitle('Pending');
  const p = ctx.params;
  const filter = paramsObject(p, ['controller', 'namespace', 'kind']);
  const limit = Math.min(Number(p.get('limit')) || 100, 10000);
  view.append(h('h1', { text: 'Pending decisions' }),
    h('p', { class: 'muted', text: 'What each controller would do next, the decisions waiting longest first (the API\'s order).' }),
    filterForm(pendingFields, p, (v) => go('/pending', v)));
  // One row more than shown says whether there are more, within the API's
  // 10,000.
  const r = await api('/pending' + qs({ ...filter, limit: Math.min(limit + 1, 10000) }));
  if (!ctx.isCurrent()) return;
  const more = r.items.length > limit || r.items.length === 10000;
  const items = r.items.slice(0, limit);
  const cols = [
    { title: 'since', value: (i) => i.since, cell: (i) => when(i.since), class: 'nowrap' },
    { title: 'controller', value: (i) => i.controller, cell: (i) => i.controller },
    { title: 'rule', value: (i) => i.rule, cell: (i) => h('code', { text: i.rule }), class: 'nowrap' },
    { title: 'action', value: (i) => i.action, cell: (i) => i.action },
    { title: 'object', value: (i) => targetText(i.target), cell: (i) => objLink(i.target) },
    { title: 'reason', value: (i) => i.reason, cell: (i) => i.reason, class: 'reason' },
    { title: 'waits', value: (i) => i.notBefore || '', cell: (i) => i.notBefore ? h('span', { title: i.notBefore, text: i.timeLeft }) : '' },
  ];
  view.append(h('div', { class: 'toolbar' },
    h('span', { class: 'muted', id: 'count', text: `${items.length}${more ? '+' : ''} decision${items.length === 1 ? '' : 's'}` }),
    downloadButtons('pending', async () => (await api('/pending' + qs({ ...filter, limit: 10000 }))).items, cols)));
  view.append(table(cols, items, { id: 'rows', empty: 'nothing pending' }));
  if (more) {
    view.append(h('div', { class: 'pager' }, limit < 10000
      ? h('button', { type: 'button', id: 'more', text: 'Show more', onclick: () => go('/pending', { ...filter, limit: Math.min(limit * 2, 10000) }) })
      : h('span', { class: 'muted', text: 'at most 10,000 shown: narrow the filter' })));
  }
}

const auditFields = [
  { name: 'controller', label: 'controller', options: [...controllers, 'kubegcd', 'operator'] },
  { name: 'namespace', label: 'namespace' },
  { name: 'kind', label: 'kind', placeholder: 'ConfigMap' },
  { name: 'rule', label: 'rule', placeholder: 'BR-21-01' },
  { name: 'outcome', label: 'outcome', options: outcomes },
  { name: 'uid', label: 'object uid' },
  { name: 'since', label: 'since (1h, 2d or RFC 3339)', placeholder: '24h' },
  { name: 'until', label: 'until', placeholder: '2026-01-02T15:04:05Z' },
];

// newerOf remembers, per filter, the cursor of the page before each page
// "Older" led to, so that "Newer" goes back one page, also after the
// browser's own back and forward buttons.
const newerOf = new Map();

export async function auditPage(view, ctx) {
  setTitle('Audit');
  const p = ctx.params;
  const filter = paramsObject(p, ['controller', 'namespace', 'kind', 'rule', 'outcome', 'uid', 'since', 'until']);
  const cursor = p.get('cursor') || '';
  const limit = Math.min(Number(p.get('limit')) || pageSize, 1000);
  const apiFilter = { ...filter, since: rangeTime(filter.since), until: rangeTime(filter.until) };
  const key = qs(filter) + '&limit=' + limit;
  if (!newerOf.has(key)) newerOf.set(key, new Map());
  const prev = newerOf.get(key);
  view.append(h('h1', { text: 'Audit' }),
    h('p', { class: 'muted', text: 'Every decision, newest first.' }),
    filterForm(auditFields, p, (v) => go('/audit', v)));
  const r = await api('/audit' + qs({ ...apiFilter, limit, cursor }));
  if (!ctx.isCurrent()) return;
  const cols = [
    { title: 'time', value: (e) => e.time, cell: (e) => when(e.time), class: 'nowrap' },
    { title: 'controller', value: (e) => e.controller, cell: (e) => e.controller },
    { title: 'rule', value: (e) => e.rule, cell: (e) => h('code', { text: e.rule }), class: 'nowrap' },
    { title: 'action', value: (e) => e.action, cell: (e) => e.action },
    { title: 'object', value: (e) => targetText(e.target), cell: (e) => objLink(e.target) },
    { title: 'outcome', value: (e) => e.outcome + (e.dryRun ? ' (dry-run)' : ''), cell: (e) => outcomeBadge(e) },
    { title: 'reason', value: (e) => e.reason + (e.error ? ' — ' + e.error : ''), cell: (e) => [e.reason, e.error ? h('div', { class: 'bad', text: e.error }) : null], class: 'reason' },
    { title: 'by', value: (e) => e.instance, cell: (e) => h('span', { class: 'muted', text: e.instance }) },
  ];
  let page = 1;
  for (let c = cursor; c && page < 10000; c = prev.get(c)) page++;
  const known = !cursor || prev.has(cursor);
  view.append(h('div', { class: 'toolbar' },
    h('span', { class: 'muted', id: 'count', text: `${known ? 'page ' + page : 'older page'}: ${r.items.length} row${r.items.length === 1 ? '' : 's'}` }),
    downloadButtons('audit', () => auditAll(apiFilter), cols)));
  view.append(table(cols, r.items, { id: 'rows', empty: 'no audit rows match' }));
  view.append(h('div', { class: 'pager' },
    h('button', { type: 'button', id: 'newest', text: 'Newest', disabled: !cursor, onclick: () => go('/audit', { ...filter, limit: p.get('limit') }) }),
    h('button', { type: 'button', id: 'newer', text: '← Newer', disabled: !cursor, onclick: () => {
      go('/audit', { ...filter, limit: p.get('limit'), cursor: prev.get(cursor) || '' });
    } }),
    h('button', { type: 'button', id: 'older', text: 'Older →', disabled: !r.next, onclick: () => {
      prev.set(r.next, cursor);
      go('/audit', { ...filter, limit: p.get('limit'), cursor: r.next });
    } })));
}

function outcomeBadge(e) {
  const cls = { applied: 'ok', 'dry-run': '', failed: 'bad', conflict: 'warn', 'not-found': '', skipped: 'warn' }[e.outcome];
  return [badge(e.outcome, cls), e.dryRun && e.outcome !== 'dry-run' ? badge('dry-run') : null];
}

// auditAll pages through the filter's rows, up to downloadCap.
async function auditAll(filter) {
  const out = [];
  let cursor = '';
  do {
    const r = await api('/audit' + qs({ ...filter, limit: 1000, cursor }));
    out.push(...r.items);
    cursor = r.next || '';
  } while (cursor && out.length < downloadCap);
  return out.slice(0, downloadCap);
}

// downloadButtons save what fetch() returns as CSV or as the API's JSON.
function downloadButtons(name, fetchAll, cols) {
  const status = h('span', { class: 'muted' });
  const run = async (fmt, btn) => {
    btn.disabled = true;
    status.textContent = 'reading…';
    try {
      const items = await fetchAll();
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      if (fmt === 'csv') download(`kubegcd-${name}-${stamp}.csv`, 'text/csv', csv(cols, items));
      else download(`kubegcd-${name}-${stamp}.json`, 'application/json', JSON.stringify({ items }, null, 2));
      status.textContent = `${items.length} rows saved` + (items.length >= downloadCap ? ` (stopped at ${downloadCap.toLocaleString()})` : '');
    } catch (err) {
      status.replaceChildren(errorBox(err));
    } finally {
      btn.disabled = false;
    }
  };
  const csvBtn = h('button', { type: 'button', id: 'download-csv', text: 'Download CSV', onclick: () => run('csv', csvBtn) });
  const jsonBtn = h('button', { type: 'button', id: 'download-json', text: 'Download JSON', onclick: () => run('json', jsonBtn) });
  return [csvBtn, jsonBtn, status];
}
