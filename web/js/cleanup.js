// The cleanup rules of /rules: each rule loaded with its last pass, the
// files and rules refused, and a chosen rule's text and its matches, paged
// by the API's cursor. (rules.js is another thing: the titles of the
// controllers' rule ids.)
import { h, api, qs, table, when, filterForm, badge, setTitle, errorBox, age, goSeconds, go, paramsObject, linkRules, ruleHref } from './util.js';
import { cursorPager } from './lists.js';

const pageSize = 50;

// passTime writes a pass's duration: milliseconds below a second, where
// passes usually are, else as ages are written.
function passTime(seconds) {
  if (seconds === null || seconds === undefined) return '';
  if (seconds < 0.001) return '<1 ms';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  return age(seconds);
}

// fileAt names a file and line of the rules directory dir as file:line,
// the file by its name in dir (the page says dir once), its whole path on
// hover.
function fileAt(dir, file, line, cls) {
  const name = dir && file.startsWith(dir.replace(/\/*$/, '/')) ? file.slice(dir.replace(/\/*$/, '/').length) : file;
  return h('code', { class: cls, title: file, text: name + (line ? ':' + line : '') });
}

// where says where a rule comes from: built in, a file's entry that
// overrides a built-in, or a file's own rule.
function where(r, dir) {
  const at = r.file ? fileAt(dir, r.file, r.line) : null;
  if (r.builtIn && at) return [badge('built-in'), ' overridden at ', at];
  if (r.builtIn) return badge('built-in');
  return at;
}

function actionBadge(action) {
  if (action === 'delete') return h('span', { class: 'badge bad', title: 'a rule that deletes: kubegcd reports its matches and deletes nothing yet', text: action });
  return badge(action);
}

function lastPass(r) {
  const lp = r.lastPass;
  if (!lp) return h('span', { class: 'muted', text: 'not yet' });
  return [when(lp.startedAt), h('span', { class: 'muted', text: ' in ' + passTime(lp.durationSeconds) })];
}

// refusedBox lists why each refused file or rule is refused, with its
// file and line.
function refusedBox(errors, dir) {
  const n = errors.length;
  return h('div', { class: 'error refused', id: 'rule-errors', role: 'alert' },
    h('strong', { text: `${n} refused: ` }), n === 1 ? 'it does not run; the other rules do.' : 'they do not run; the other rules do.',
    h('ul', {}, errors.map((e) => h('li', { dataset: { file: e.file, line: e.line ? String(e.line) : '' } },
      fileAt(dir, e.file, e.line, 'at'),
      e.rule ? [' rule ', h('code', { text: e.rule })] : null, ': ',
      e.field ? [h('code', { text: e.field }), ': '] : null,
      h('span', { text: e.detail })))));
}

export async function cleanupRulesPage(view, ctx) {
  setTitle('Rules');
  const p = ctx.params;
  const chosen = p.get('rule') || '';
  view.append(h('h1', { text: 'Cleanup rules' }),
    h('p', { class: 'muted', text: 'Rules written as SQL over the mirror. Each runs every interval and reports what it matches now; a finding is shown with the matches and never acted on.' }));
  const list = await api('/rules');
  if (!ctx.isCurrent()) return;
  const errors = list.errors || [];
  const files = list.files || [];
  view.append(h('p', { class: 'muted', id: 'rules-source' }, 'Rule files are read from ', h('code', { text: list.dir }),
    `: ${files.length === 0 ? 'none there' : files.length + ' file' + (files.length === 1 ? '' : 's')}`,
    list.loadedAt ? [', last read ', when(list.loadedAt)] : null, '.'));
  if (errors.length) view.append(refusedBox(errors, list.dir));
  const rows = table([
    { title: 'rule', cell: (r) => h('a', { href: ruleHref(r.id), title: r.description || r.id }, h('code', { text: r.id })), class: 'nowrap' },
    { title: 'source', cell: (r) => where(r, list.dir) },
    { title: 'action', cell: (r) => actionBadge(r.action) },
    { title: 'every', cell: (r) => age(goSeconds(r.interval)) || r.interval, class: 'nowrap' },
    { title: 'matches', class: 'num', cell: (r) => String(r.matches) },
    { title: 'findings', class: 'num', cell: (r) => r.findings ? badge(String(r.findings), 'warn') : '0' },
    { title: 'last pass', cell: lastPass, class: 'nowrap' },
    { title: 'error', cell: (r) => r.lastPass && r.lastPass.error ? h('span', { class: 'bad', text: r.lastPass.error }) : '', class: 'reason' },
  ], list.items, { id: 'rules', empty: 'no rule is loaded' });
  rows.classList.add('rules');
  for (const tr of rows.querySelectorAll('tbody tr')) {
    const a = tr.querySelector('a[href^="#/rules"]');
    if (!a) continue;
    const id = a.textContent;
    tr.dataset.rule = id;
    if (id === chosen) {
      tr.classList.add('chosen');
      tr.setAttribute('aria-current', 'true');
    }
  }
  view.append(rows);
  if (!chosen) {
    view.append(h('p', { class: 'muted', id: 'rule-hint', text: 'Choose a rule to see its SELECT, its parameters and what it matches.' }));
    return;
  }
  const rule = list.items.find((r) => r.id === chosen);
  if (!rule) {
    view.append(h('div', { class: 'note', id: 'rule', text: `No rule ${chosen} is loaded.` }));
    return;
  }
  await ruleSection(view, ctx, rule, list.dir);
}

// ruleSection shows one rule: its words, parameters and exclusions, its
// matches with the namespace and kind filters, then its SELECT, which the
// built-ins' make long.
async function ruleSection(view, ctx, r, dir) {
  const p = ctx.params;
  const filter = paramsObject(p, ['namespace', 'kind']);
  const lp = r.lastPass;
  const section = h('section', { id: 'rule', class: 'rule-detail', dataset: { rule: r.id } },
    h('h2', {}, 'Rule ', h('code', { text: r.id })),
    r.description ? h('p', { id: 'rule-description', text: r.description }) : null,
    h('dl', { class: 'facts' },
      h('dt', { text: 'source' }), h('dd', {}, where(r, dir)),
      h('dt', { text: 'action' }), h('dd', {}, actionBadge(r.action)),
      h('dt', { text: 'interval' }), h('dd', { text: age(goSeconds(r.interval)) || r.interval }),
      h('dt', { text: 'hash' }), h('dd', {}, h('code', { text: r.hash })),
      h('dt', { text: 'last pass' }), h('dd', {}, lastPass(r),
        lp ? h('span', { class: 'muted', text: `: ${lp.matches} match${lp.matches === 1 ? '' : 'es'}, ${lp.findings} finding${lp.findings === 1 ? '' : 's'}` }) : null),
      r.matchedAt ? [h('dt', { text: 'matches as of' }), h('dd', {}, when(r.matchedAt))] : null),
    lp && lp.error ? h('div', { class: 'error', id: 'rule-error', text: 'Its last pass failed: ' + lp.error + '. The matches below are those of the pass before.' }) : null,
    h('h3', { text: 'Parameters' }),
    paramsList(r.params),
    h('h3', { text: 'Left out' }),
    excludeList(r.exclude));
  // The matches come before the SELECT, and are read after it is shown:
  // a failed read leaves the rule's text on the page.
  const matches = h('div', { id: 'rule-matches' }, h('p', { class: 'muted', text: 'reading the matches…' }));
  // The counts are the rule's, whatever the filter.
  const counts = `${r.matches}${r.findings ? ` and ${r.findings} finding${r.findings === 1 ? '' : 's'}` : ''}`;
  section.append(h('h3', { id: 'matches-title' }, `Matches (${counts}${Object.keys(filter).length ? ' in all' : ''})`),
    filterForm([
      { name: 'namespace', label: 'namespace' },
      { name: 'kind', label: 'kind', placeholder: 'e.g. ConfigMap' },
    ], p, (v) => go('/rules', { rule: r.id, ...v })),
    matches,
    h('h3', { text: 'SELECT' }),
    h('pre', { class: 'sql', id: 'rule-select' }, h('code', { text: r.select })));
  view.append(section);
  // On a phone the rules are cards, one above the other: the chosen one
  // would be far below.
  if (window.matchMedia('(max-width: 700px)').matches) section.scrollIntoView({ block: 'start' });
  const limit = Math.min(Number(p.get('limit')) || pageSize, 1000);
  let m;
  try {
    m = await api(`/rules/${encodeURIComponent(r.id)}/matches` + qs({ ...filter, limit, cursor: p.get('cursor') }));
  } catch (err) {
    matches.replaceChildren(errorBox(err));
    return;
  }
  if (!ctx.isCurrent()) return;
  const pg = cursorPager('/rules', { rule: r.id, ...filter }, p, m.next, ['First', '← Previous', 'Next →']);
  const rows = table([
    { title: 'kind', cell: (i) => i.kind },
    { title: 'object', cell: (i) => h('a', { href: '#/objects/' + encodeURIComponent(i.uid), title: 'uid ' + i.uid,
      text: (i.namespace ? i.namespace + '/' : '') + i.name }) },
    { title: 'reason', class: 'reason', cell: (i) => [i.finding ? [badge('finding', 'warn'), ' '] : null, linkRules(i.reason)] },
    { title: 'since', cell: (i) => when(i.since), class: 'nowrap' },
  ], m.items, { id: 'matches', empty: Object.keys(filter).length ? 'no match in this filter' : 'it matches nothing' });
  for (const [i, tr] of [...rows.querySelectorAll('tbody tr')].entries()) {
    if (m.items[i] && m.items[i].finding) tr.classList.add('finding');
  }
  matches.replaceChildren(h('p', { class: 'muted', id: 'count', text: `${pg.label}: ${m.items.length} row${m.items.length === 1 ? '' : 's'}` }),
    rows, pg.buttons);
}

// paramsList shows a rule's parameters as the file wrote them.
function paramsList(params) {
  const entries = Object.entries(params || {});
  if (entries.length === 0) return h('p', { class: 'muted', id: 'rule-params', text: 'none' });
  return h('dl', { class: 'facts', id: 'rule-params' }, entries.map(([k, v]) => [
    h('dt', {}, h('code', { text: ':' + k })),
    h('dd', {}, h('code', { text: typeof v === 'string' ? v : JSON.stringify(v) })),
  ]));
}

// excludeList shows what a rule leaves out, whatever its SELECT says.
function excludeList(ex) {
  const parts = [
    ['namespaces', (ex && ex.namespaces) || []],
    ['labels', (ex && ex.labels) || []],
    ['names', (ex && ex.names) || []],
  ].filter(([, v]) => v.length);
  if (parts.length === 0) return h('p', { class: 'muted', id: 'rule-exclude', text: 'nothing' });
  return h('dl', { class: 'facts', id: 'rule-exclude' }, parts.map(([k, v]) => [
    h('dt', { text: k }),
    h('dd', {}, v.map((x, i) => [i ? ', ' : '', h('code', { text: x })])),
  ]));
}
