// Stuck deletions, ownerReference lint and the Lease inventory.
import { h, api, qs, table, when, objLink, filterForm, badge, setTitle, age, go, paramsObject, ruleLink, linkRules } from './util.js';

const stateTitles = {
  'namespace-terminating': 'Namespaces Terminating',
  'deleting-dependents': 'Foreground deletions waiting for dependents',
  'orphaning-dependents': 'Orphan deletions waiting for dependents',
  finalizing: 'Held by finalizers',
  deleting: 'Being deleted',
};

// blockerLine says what one blocker is, in one line.
function blockerLine(b) {
  const parts = [badge(b.type, b.type === 'finalizer' ? 'warn' : '')];
  if (b.target) parts.push(' ', objLink(b.target));
  if (b.finalizer) parts.push(' ', h('code', { text: b.finalizer }));
  if (b.groupVersion) parts.push(' ', h('code', { text: b.groupVersion }));
  if (b.counts) {
    parts.push(' ', h('span', { class: 'muted', text: Object.entries(b.counts).map(([k, n]) => `${n} ${k}`).join(', ') }));
  }
  if (b.reason) parts.push(h('span', { class: 'muted' }, ' — ', linkRules(b.reason)));
  return parts;
}

// blockerChain renders blockers as a nested list: owner ← dependent ←
// finalizer reads top to bottom.
export function blockerChain(blockers) {
  if (!blockers || blockers.length === 0) return null;
  return h('ul', { class: 'chain' }, blockers.map((b) => h('li', {}, blockerLine(b), blockerChain(b.blockers))));
}

// stuckItem shows one stuck deletion; opts.explanation false leaves out
// its explanation, for a page that says it already.
export function stuckItem(it, opts = {}) {
  return h('div', { class: 'item', dataset: { uid: it.target.uid } },
    h('div', { class: 'head' }, h('strong', {}, objLink(it.target)),
      h('span', { class: 'muted', title: it.deletionRequested, text: 'deletion requested ' + age(it.age) + ' ago' }),
      badge(it.state, 'bad')),
    opts.explanation === false ? null : h('div', { class: 'explanation' }, linkRules(it.explanation)),
    blockerChain(it.blockers),
    it.conditions && it.conditions.length ? h('details', {}, h('summary', { text: 'conditions' }),
      table([
        { title: 'type', cell: (c) => c.type },
        { title: 'status', cell: (c) => c.status },
        { title: 'reason', cell: (c) => c.reason || '' },
        { title: 'message', cell: (c) => c.message || '', class: 'reason' },
      ], it.conditions)) : null);
}

export async function stuckPage(view, ctx) {
  setTitle('Stuck');
  const p = ctx.params;
  const filter = paramsObject(p, ['namespace', 'kind', 'minAge']);
  view.append(h('h1', { text: 'Stuck deletions' }),
    h('p', { class: 'muted', text: 'Deletions that do not finish, oldest request first, with what holds each. minAge 0 lists every deletion.' }),
    filterForm([
      { name: 'namespace', label: 'namespace' },
      { name: 'kind', label: 'kind' },
      { name: 'minAge', label: 'older than (default --stuck-after)' },
    ], p, (v) => go('/stuck', v)));
  const limit = Math.min(Number(p.get('limit')) || 500, 10000);
  const r = await api('/stuck' + qs({ ...filter, limit }));
  if (!ctx.isCurrent()) return;
  // The placeholder is the threshold the server applied: --stuck-after
  // unless the filter set one.
  const minAgeBox = view.querySelector('input[name="minAge"]');
  if (minAgeBox && !filter.minAge) minAgeBox.placeholder = r.minAge.replace(/(\D)0s$/, '$1').replace(/(\D)0m$/, '$1');
  view.append(h('p', { class: 'muted', id: 'count', text: `${r.items.length}${r.truncated ? '+' : ''} stuck deletion${r.items.length === 1 ? '' : 's'}` }));
  if (r.truncated) {
    view.append(h('div', { class: 'note' }, `More than the first ${limit.toLocaleString()}: narrow by namespace or kind`,
      limit < 10000 ? [', or ', h('a', { href: '#/stuck' + qs({ ...filter, limit: Math.min(limit * 4, 10000) }), text: 'show more' })] : null, '.'));
  }
  if (r.items.length === 0) view.append(h('div', { class: 'note', text: 'Nothing is stuck.' }));
  const groups = new Map();
  for (const it of r.items) {
    if (!groups.has(it.state)) groups.set(it.state, []);
    groups.get(it.state).push(it);
  }
  for (const [state, items] of groups) {
    view.append(h('section', { class: 'group', dataset: { state } },
      h('h2', { text: `${stateTitles[state] || state} (${items.length})` }),
      h('div', { class: 'body' }, items.map(stuckItem))));
  }
}

export async function lintPage(view, ctx) {
  setTitle('Lint');
  const p = ctx.params;
  const filter = paramsObject(p, ['namespace', 'rule', 'severity']);
  const limit = Math.min(Number(p.get('limit')) || 1000, 100000);
  view.append(h('h1', { text: 'ownerReference lint' }),
    h('p', { class: 'muted', text: 'Problems in ownerReferences, found from the mirror alone, grouped by rule.' }),
    filterForm([
      { name: 'namespace', label: 'namespace' },
      { name: 'rule', label: 'rule (id or name)' },
      { name: 'severity', label: 'severity', options: ['error', 'warning', 'info'] },
    ], p, (v) => go('/lint', v)));
  const r = await api('/lint' + qs({ ...filter, limit }));
  if (!ctx.isCurrent()) return;
  const counts = r.counts || {};
  view.append(h('div', { class: 'toolbar' }, Object.keys(counts).sort().map((rule) =>
    h('a', { class: 'button', href: '#/lint' + qs({ ...filter, rule }), title: ruleLink(rule).title || '', text: `${rule}: ${counts[rule]}` }))));
  // The counts come from the last count of the whole mirror, the findings
  // below from the mirror now: they may differ by what changed since.
  if (r.countsAt) view.append(h('p', { class: 'muted', id: 'counts-at' }, 'counts as of ', when(r.countsAt)));
  view.append(h('p', { class: 'muted', id: 'count', text: `${r.items.length} finding${r.items.length === 1 ? '' : 's'} shown` }));
  if (r.truncated) {
    view.append(h('div', { class: 'note' }, `More findings than the first ${limit.toLocaleString()}: narrow by namespace or rule, or `,
      h('a', { href: '#/lint' + qs({ ...filter, limit: Math.min(limit * 10, 100000) }), text: 'show more' }), '.'));
  }
  const groups = new Map();
  for (const f of r.items) {
    const k = f.rule + ' ' + f.name;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(f);
  }
  for (const [k, items] of groups) {
    const sev = items[0].severity;
    view.append(h('section', { class: 'group', dataset: { rule: items[0].rule } },
      h('h2', {}, badge(sev, sev === 'error' ? 'bad' : sev === 'warning' ? 'warn' : ''), ' ', ruleLink(items[0].rule), ' ', items[0].name,
        h('span', { class: 'muted', text: ` (${counts[items[0].rule] ?? items.length})` })),
      h('div', { class: 'body' }, table([
        { title: 'object', cell: (f) => objLink(f.target) },
        { title: 'owner reference', cell: (f) => h('code', { text: `${f.ownerReference.kind}/${f.ownerReference.name}` }) },
        { title: 'message', cell: (f) => linkRules(f.message), class: 'reason' },
      ], items))));
  }
  if (r.items.length === 0) view.append(h('div', { class: 'note', text: 'No findings.' }));
}

// findingSeverity is how each kind of Lease finding shows: no live
// candidate is what stops an election.
const findingSeverity = {
  'no-live-candidate': 'bad',
  'holder-not-preferred': 'warn',
  'candidate-expired': 'warn',
  'candidate-without-lease': 'warn',
};

function findingBadge(kind) {
  return badge(kind, findingSeverity[kind] || 'warn');
}

// versions is a candidate's binary version, and its emulation version
// where it differs.
function versions(c) {
  const v = c.binaryVersion || '?';
  return c.emulationVersion && c.emulationVersion !== c.binaryVersion ? `${v}, emulates ${c.emulationVersion}` : v;
}

// candidateList shows a Lease's candidates, in a list that opens: who,
// which versions, when each renewed, and whether it expired. A strategy
// is shown where it is not the Lease's.
function candidateList(l) {
  const cs = l.candidates || [];
  if (cs.length === 0) return h('span', { class: 'muted', text: 'none' });
  const live = cs.filter((c) => !c.expired).length;
  return h('details', { class: 'candidates' },
    h('summary', { text: `${cs.length} candidate${cs.length === 1 ? '' : 's'}, ${live} live` }),
    h('ul', { class: 'chain' }, cs.map((c) => h('li', { dataset: { candidate: c.name } },
      h('code', { text: c.name }), ' ', c.expired ? badge('expired', 'bad') : badge('live', 'ok'),
      h('div', { class: 'muted' }, versions(c), c.strategy && c.strategy !== l.strategy ? ', ' + c.strategy : ''),
      h('div', { class: 'muted' }, 'renewed ', c.renewTime ? when(c.renewTime) : 'never')))));
}

export async function leasesPage(view, ctx) {
  setTitle('Leases');
  const p = ctx.params;
  const filter = paramsObject(p, ['namespace', 'expired']);
  view.append(h('h1', { text: 'Leases' }),
    h('p', { class: 'muted', text: 'Every Lease, expired ones first, then the longest since renewed. Under coordinated leader election, each with its strategy, preferred holder and candidates.' }),
    filterForm([
      { name: 'namespace', label: 'namespace' },
      { name: 'expired', label: 'expired', options: ['true', 'false'] },
    ], p, (v) => go('/leases', v)));
  const r = await api('/leases' + qs(filter));
  if (!ctx.isCurrent()) return;
  const items = r.items.slice().sort((a, b) => (b.expired - a.expired) || ((b.renewAgeSeconds ?? Infinity) - (a.renewAgeSeconds ?? Infinity)) ||
    (a.namespace + '/' + a.name).localeCompare(b.namespace + '/' + b.name));
  const findings = r.findings || [];
  const findingsOf = (l) => findings.filter((f) => f.namespace === l.namespace && f.lease === l.name);
  view.append(h('p', { class: 'muted', id: 'count', text: `${items.length} lease${items.length === 1 ? '' : 's'}, ${items.filter((l) => l.expired).length} expired, ${findings.length} finding${findings.length === 1 ? '' : 's'}` }));
  if (findings.length > 0) {
    view.append(h('section', { class: 'group', id: 'findings' },
      h('h2', { text: `Findings (${findings.length})` }),
      h('div', { class: 'body' }, h('ul', { class: 'chain' }, findings.map((f) => h('li', { dataset: { kind: f.kind } },
        findingBadge(f.kind), ' ', h('code', { text: `${f.namespace}/${f.lease}` }),
        f.candidate ? [' candidate ', h('code', { text: f.candidate })] : null,
        h('div', { class: 'reason' }, linkRules(f.message))))))));
  }
  const rows = table([
    { title: 'lease', cell: (l) => objLink({ kind: 'Lease', namespace: l.namespace, name: l.name, uid: l.uid }) },
    { title: 'role', cell: (l) => [l.role || '', l.strategy ? h('div', { class: 'muted', title: 'strategy', text: l.strategy }) : null] },
    { title: 'holder', cell: (l) => [l.holderIdentity ? h('code', { text: l.holderIdentity }) : h('span', { class: 'muted', text: 'none' }),
      l.preferredHolder ? h('div', { class: 'preferred' }, h('span', { class: 'muted', text: 'preferred ' }), h('code', { text: l.preferredHolder }),
        l.preferredHolder !== l.holderIdentity ? [' ', badge('not the holder', 'warn')] : null) : null] },
    { title: 'renewed', cell: (l) => l.renewTime ? when(l.renewTime) : '—', class: 'nowrap' },
    { title: 'duration', class: 'num', cell: (l) => l.leaseDurationSeconds != null ? l.leaseDurationSeconds + 's' : '' },
    { title: 'state', cell: (l) => l.expired ? badge('expired', 'bad') : badge('live', 'ok') },
    { title: 'findings', cell: (l) => findingsOf(l).map((f) => h('div', {}, findingBadge(f.kind))) },
    // Only a leader election's holder counts transitions: node and API
    // server identity Leases leave the field unset.
    { title: 'transitions', class: 'num', cell: (l) => l.leaseTransitions != null ? String(l.leaseTransitions)
      : h('span', { class: 'muted', text: '—', title: "not counted: the Lease's spec has no leaseTransitions, which only leader election's holders set" }) },
    { title: 'holder changes', class: 'num', cell: (l) => String((l.holderChanges || []).length) },
    { title: 'gaps', cell: (l) => (l.gaps || []).map((g) => h('div', { class: 'muted' }, when(g.from), ' → ', g.to ? when(g.to) : 'now')) },
    { title: 'candidates', cell: candidateList },
  ], items, { id: 'rows', empty: 'no Leases' });
  rows.classList.add('leases');
  view.append(rows);
  const without = r.candidatesWithoutLease || [];
  if (without.length > 0) {
    view.append(h('h2', { text: 'Candidates for a Lease that does not exist' }),
      table([
        { title: 'candidate', cell: (c) => h('code', { text: `${c.namespace}/${c.name}` }) },
        { title: 'lease', cell: (c) => h('code', { text: c.leaseName }) },
        { title: 'versions', cell: versions },
        { title: 'strategy', cell: (c) => c.strategy || '' },
        { title: 'renewed', cell: (c) => c.renewTime ? when(c.renewTime) : 'never', class: 'nowrap' },
        { title: 'state', cell: (c) => c.expired ? badge('expired', 'bad') : badge('live', 'ok') },
      ], without, { id: 'candidates-without-lease' }));
  }
}
