// The Pending and Audit tables: filters the API applies, paging by the
// API's cursor (never everything at once), links to objects, downloads.
import { h, api, qs, table, when, objLink, filterForm, badge, csv, download, setTitle, errorBox, targetText, go, paramsObject, linkRules, age, goSeconds, decisionRule } from './util.js';

const controllers = ['ownergc', 'podgc', 'ttl', 'svgc', 'lcgc', 'rules'];
const outcomes = ['applied', 'dry-run', 'failed', 'conflict', 'not-found', 'skipped', 'unknown'];
const pageSize = 50;
const downloadCap = 50000; // rows a download reads at most, by pages of the API's largest

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
  { name: 'kind', label: 'kind', placeholder: 'e.g. ConfigMap' },
  // Oldest first, as /pending, /stuck and kubegcd get pending order them.
  { name: 'order', label: 'order', options: ['newest'], labels: { '': 'waiting longest first', newest: 'newest first' } },
];

export async function pendingPage(view, ctx) {
  setTitle('Pending');
  const p = ctx.params;
  const filter = paramsObject(p, ['controller', 'namespace', 'kind', 'order']);
  const apiFilter = { ...filter, order: filter.order || 'oldest' };
  const limit = Math.min(Number(p.get('limit')) || pageSize, 1000);
  view.append(h('h1', { text: 'Pending decisions' }),
    h('p', { class: 'muted', text: 'What each controller would do next, ' +
      (filter.order === 'newest' ? 'newest first.' : 'the decisions waiting longest first.') }),
    filterForm(pendingFields, p, (v) => go('/pending', v)));
  const r = await api('/pending' + qs({ ...apiFilter, limit, cursor: p.get('cursor') }));
  if (!ctx.isCurrent()) return;
  const cols = [
    { title: 'since', value: (i) => i.since, cell: (i) => when(i.since), class: 'nowrap' },
    { title: 'controller', value: (i) => i.controller, cell: (i) => i.controller },
    { title: 'rule', value: (i) => i.rule, cell: decisionRule, class: 'nowrap' },
    { title: 'action', value: (i) => i.action, cell: (i) => i.action },
    { title: 'object', value: (i) => targetText(i.target), cell: (i) => objLink(i.target) },
    { title: 'reason', value: (i) => i.reason, cell: (i) => linkRules(i.reason), class: 'reason' },
    { title: 'waits', value: (i) => i.notBefore || '', cell: (i) => i.notBefore ? h('span', { title: i.notBefore, text: age(goSeconds(i.timeLeft)) || i.timeLeft }) : '' },
  ];
  const pg = cursorPager('/pending', filter, p, r.next,
    filter.order === 'newest' ? undefined : ['Oldest', '← Older', 'Newer →']);
  view.append(h('div', { class: 'toolbar' },
    h('span', { class: 'muted', id: 'count', text: `${pg.label}: ${r.items.length} decision${r.items.length === 1 ? '' : 's'}` }),
    downloadButtons('pending', () => readAll('/pending', apiFilter, 10000), cols)));
  view.append(table(cols, r.items, { id: 'rows', empty: 'nothing pending' }));
  view.append(pg.buttons);
}

const auditFields = [
  { name: 'controller', label: 'controller', options: [...controllers, 'kubegcd', 'operator'] },
  { name: 'namespace', label: 'namespace' },
  { name: 'kind', label: 'kind', placeholder: 'e.g. ConfigMap' },
  { name: 'rule', label: 'rule', placeholder: 'e.g. BR-21-01' },
  { name: 'outcome', label: 'outcome', options: outcomes },
  { name: 'uid', label: 'object uid' },
  // Placeholders are hints, "e.g." and in italics (app.css): an example
  // time there read as a filter already set.
  { name: 'since', label: 'since (1h, 2d or RFC 3339)', placeholder: 'e.g. 24h' },
  { name: 'until', label: 'until (1h, 2d or RFC 3339)', placeholder: 'e.g. 1h' },
];

export async function auditPage(view, ctx) {
  setTitle('Audit');
  const p = ctx.params;
  const filter = paramsObject(p, ['controller', 'namespace', 'kind', 'rule', 'outcome', 'uid', 'since', 'until']);
  const limit = Math.min(Number(p.get('limit')) || pageSize, 1000);
  const apiFilter = { ...filter, since: rangeTime(filter.since), until: rangeTime(filter.until) };
  view.append(h('h1', { text: 'Audit' }),
    h('p', { class: 'muted', text: 'Every decision, newest first.' }),
    filterForm(auditFields, p, (v) => go('/audit', v)));
  const r = await api('/audit' + qs({ ...apiFilter, limit, cursor: p.get('cursor') }));
  if (!ctx.isCurrent()) return;
  const cols = [
    { title: 'time', value: (e) => e.time, cell: (e) => when(e.time), class: 'nowrap' },
    { title: 'controller', value: (e) => e.controller, cell: (e) => e.controller },
    { title: 'rule', value: (e) => e.rule, cell: decisionRule, class: 'nowrap' },
    { title: 'action', value: (e) => e.action, cell: (e) => e.action },
    { title: 'object', value: (e) => targetText(e.target), cell: (e) => objLink(e.target) },
    { title: 'outcome', value: (e) => e.outcome + (e.dryRun ? ' (dry-run)' : ''), cell: (e) => outcomeBadge(e) },
    { title: 'reason', value: (e) => e.reason + (e.error ? ' — ' + e.error : ''), cell: (e) => [linkRules(e.reason), e.error ? h('div', { class: 'bad', text: e.error }) : null], class: 'reason' },
    { title: 'by', value: (e) => e.instance, cell: (e) => h('span', { class: 'muted', text: e.instance }) },
  ];
  const pg = cursorPager('/audit', filter, p, r.next);
  for (const g of r.gaps || []) view.append(h('div', { class: 'bad gap', text: g.message }));
  view.append(h('div', { class: 'toolbar' },
    h('span', { class: 'muted', id: 'count', text: `${pg.label}: ${r.items.length} row${r.items.length === 1 ? '' : 's'}` }),
    downloadButtons('audit', () => readAll('/audit', apiFilter, 1000), cols)));
  view.append(table(cols, r.items, { id: 'rows', empty: 'no audit rows match' }));
  view.append(pg.buttons);
}

// newerOf remembers, per route and filter, the cursor of the page before
// each page "Older" led to, so that "Newer" goes back one page, also after
// the browser's own back and forward buttons.
const newerOf = new Map();

// cursorPager pages a route by the API's cursor: the page's label and the
// buttons to the first page, the one before and the one after (#newest,
// #newer, #older, named for the newest-first order), texts their words in
// the list's order. next is the API's cursor of the following page.
export function cursorPager(route, filter, p, next, texts = ['Newest', '← Newer', 'Older →']) {
  const cursor = p.get('cursor') || '';
  const key = route + qs(filter) + '&limit=' + (p.get('limit') || '');
  if (!newerOf.has(key)) newerOf.set(key, new Map());
  const prev = newerOf.get(key);
  let page = 1;
  for (let c = cursor; c && page < 10000; c = prev.get(c)) page++;
  const known = !cursor || prev.has(cursor);
  const base = { ...filter, limit: p.get('limit') };
  const buttons = h('div', { class: 'pager' },
    h('button', { type: 'button', id: 'newest', text: texts[0], disabled: !cursor, onclick: () => go(route, base) }),
    h('button', { type: 'button', id: 'newer', text: texts[1], disabled: !cursor, onclick: () => {
      go(route, { ...base, cursor: prev.get(cursor) || '' });
    } }),
    h('button', { type: 'button', id: 'older', text: texts[2], disabled: !next, onclick: () => {
      prev.set(next, cursor);
      go(route, { ...base, cursor: next });
    } }));
  return { label: known ? 'page ' + page : 'older page', buttons };
}

function outcomeBadge(e) {
  const cls = { applied: 'ok', 'dry-run': '', failed: 'bad', conflict: 'warn', 'not-found': '', skipped: 'warn', unknown: 'warn' }[e.outcome];
  return [badge(e.outcome, cls), e.dryRun && e.outcome !== 'dry-run' ? badge('dry-run') : null];
}

// readAll pages through a filter's rows by the cursor, pageMax a request,
// up to downloadCap.
async function readAll(path, filter, pageMax) {
  const out = [];
  let cursor = '';
  do {
    const r = await api(path + qs({ ...filter, limit: Math.min(pageMax, downloadCap - out.length), cursor }));
    out.push(...r.items);
    cursor = r.next || '';
  } while (cursor && out.length < downloadCap);
  return out;
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
