// One object: what it is, its owners and dependents drawn as a graph with
// its references by name beside them, why it is or is not pending, what
// references it and what it references, the cleanup rules that match it,
// what holds its deletion, its history and audit rows, and what a delete
// would take with it. A deleted object's page offers to restore it from
// its copy.
import { h, api, ApiError, qs, table, when, objLink, badge, setTitle, errorBox, targetText, ruleLink, linkRules, ruleHref, decisionRule } from './util.js';
import { drawGraph, groupMin } from './graph.js';
import { stuckItem } from './diag.js';
import { cascadeView } from './cascade.js';
import { copySection, restoredFromNote } from './restore.js';

const ownerStateBadge = {
  present: 'ok', missing: 'bad', 'being-deleted': 'warn', 'deleting-dependents': 'warn', 'other-namespace': 'bad', 'name-mismatch': 'bad',
};

// maxDrawn is the most objects the page draws in one graph: dagre lays out
// 500 in about a second, and its time grows faster than the count.
const maxDrawn = 1000;

function flag(v) {
  return v === true ? 'true' : v === false ? 'false' : '—';
}

export async function objectPage(view, ctx) {
  const uid = ctx.args[0];
  // The graph is read beside the object, not after it, and only as much
  // of it as a browser lays out in a few seconds.
  const graphRead = api('/graph' + qs({ uid, limit: maxDrawn }));
  graphRead.catch(() => {}); // a gone object's 404 is answered below
  let det;
  try {
    det = await api('/objects/' + encodeURIComponent(uid));
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    return gonePage(view, ctx, uid);
  }
  if (!ctx.isCurrent()) return;
  const o = det.object;
  const t = { kind: o.kind, namespace: o.namespace, name: o.name, uid: o.uid };
  setTitle(targetText(t));
  view.append(h('h1', { id: 'object-title', text: targetText(t) }),
    h('div', { class: 'toolbar' },
      o.deletionTimestamp ? badge('being deleted', 'bad') : badge('exists', 'ok'),
      o.finalizers.map((f) => badge('finalizer ' + f, 'warn')),
      det.pending.length ? badge(det.pending.length + ' pending', 'warn') : null),
    h('dl', { class: 'facts' },
      h('dt', { text: 'apiVersion' }), h('dd', { text: o.apiVersion }),
      o.namespace ? [h('dt', { text: 'namespace' }), h('dd', {}, o.namespace, ' ',
        h('a', { id: 'namespace-map', href: '#/map' + qs({ namespace: o.namespace }), text: '(its map)' }))] : null,
      h('dt', { text: 'uid' }), h('dd', {}, h('code', { text: o.uid })),
      h('dt', { text: 'created' }), h('dd', {}, when(o.creationTimestamp)),
      o.deletionTimestamp ? [h('dt', { text: 'deletion requested' }), h('dd', {}, when(o.deletionTimestamp))] : null,
      h('dt', { text: 'resourceVersion' }), h('dd', { text: o.resourceVersion })),
    h('div', { class: 'why', id: 'why' }, linkRules(det.why)),
    restoredFromNote(det));

  // The graph first: it is what people come for.
  const graphBox = h('div', { id: 'graph', role: 'img', 'aria-label': 'ownership graph: owners above, dependents below; click a node to open it' });
  const graphNote = h('span', { class: 'muted' });
  const legend = graphLegend();
  // Said once the graph draws references by name too.
  const andReferences = h('span', { class: 'reference-key', hidden: true, text: ' and references' });
  view.append(h('h2', {}, 'Ownership graph', andReferences),
    legend,
    graphBox, h('div', { class: 'graphbar' }, graphNote));
  const graphDone = graphRead.then(async (g) => {
    if (!ctx.isCurrent()) return;
    // /graph lists an object only with an edge: the object alone is drawn
    // alone.
    if (!g.nodes.some((n) => n.uid === o.uid)) {
      g.nodes.unshift({ uid: o.uid, kind: o.kind, namespace: o.namespace, name: o.name, beingDeleted: !!o.deletionTimestamp,
        deletingDependents: o.finalizers.includes('foregroundDeletion') && !!o.deletionTimestamp, missing: false, virtual: false });
    }
    if (g.truncated) {
      graphBox.classList.add('toolarge');
      graphBox.replaceChildren(h('div', { class: 'note' }, `Over ${maxDrawn.toLocaleString()} objects around it: too many to draw. `,
        'The lists below name its owners and first dependents; ',
        h('a', { href: '/graph' + qs({ uid, format: 'dot' }), text: 'the graph in DOT' }), ' holds them all (up to the API\'s limit).'));
      return;
    }
    withReferences(g, o, det);
    if (g.nodes.length > 150) graphBox.classList.add('big');
    const gv = await drawGraph(graphBox, g, uid, (id) => { location.hash = '#/objects/' + encodeURIComponent(id); });
    for (const k of [andReferences, ...legend.querySelectorAll('.reference-key')]) k.hidden = !gv.references;
    if (gv.references) {
      graphBox.setAttribute('aria-label', 'ownership graph and references by name: owners and referrers above, dependents and what it references below; click a node to open it');
    }
    graphNote.replaceChildren(graphNoteText(g, gv), ' Scroll to zoom, drag to pan. ',
      h('button', { type: 'button', text: 'Fit all', onclick: () => gv.fit() }),
      h('button', { type: 'button', id: 'fold-all', text: 'Fold every group', hidden: !gv.groups, onclick: () => gv.collapseAll() }));
    return gv;
  }).catch((err) => {
    graphBox.replaceChildren(errorBox(err));
    return null;
  });

  // Owners and dependents as lists too: links a keyboard reaches.
  const refs = new Map(o.ownerReferences.map((r) => [r.uid, r]));
  view.append(h('h2', { text: `Owners (${det.owners.length})` }), table([
    // An owner neither the mirror nor the history ever held has no page
    // to open: the row says so instead of linking.
    { title: 'owner', cell: (w) => w.neverSeen ? [h('span', { text: targetText(w) }), ' ',
      h('span', { class: 'bad never-seen', text: 'never seen: this reference is dangling' })] : objLink(w) },
    { title: 'state', cell: (w) => badge(w.state, ownerStateBadge[w.state]) },
    { title: 'controller', cell: (w) => flag(refs.get(w.uid)?.controller) },
    { title: 'blockOwnerDeletion', cell: (w) => flag(refs.get(w.uid)?.blockOwnerDeletion) },
  ], det.owners, { id: 'owners', empty: 'no owner references' }));
  // A long list of dependents is folded: the graph shows them all.
  const deps = h('details', { id: 'dependents', open: det.dependents.length <= 20 },
    h('summary', {}, h('h2', { class: 'inline', text: `Dependents (${det.dependents.length}${det.dependentsTruncated ? '+' : ''})` })),
    table([
      { title: 'dependent', cell: (d) => objLink(d) },
      { title: 'blockOwnerDeletion', cell: (d) => flag(d.blockOwnerDeletion) },
    ], det.dependents, { empty: 'no dependents' }),
    det.dependentsTruncated ? h('p', { class: 'muted', text: 'More than listed here: the graph shows them all.' }) : null);
  view.append(deps);
  view.append(referencesSection(det), rulesSection(det));

  view.append(h('h2', { text: 'Pending decisions' }), table([
    { title: 'controller', cell: (p) => p.controller },
    { title: 'action', cell: (p) => p.action },
    { title: 'rule', cell: decisionRule, class: 'nowrap' },
    { title: 'reason', cell: (p) => linkRules(p.reason), class: 'reason' },
    { title: 'since', cell: (p) => when(p.since) },
    { title: 'not before', cell: (p) => p.notBefore ? when(p.notBefore) : '' },
  ], det.pending, { empty: 'nothing pending' }));

  if (det.stuck) {
    // Its explanation is already in the why above.
    view.append(h('h2', { text: 'What holds its deletion' }), h('div', { id: 'blockers' }, stuckItem(det.stuck, { explanation: false })));
  }
  if (det.lint.length) {
    view.append(h('h2', { text: 'ownerReference lint' }), table([
      { title: 'rule', cell: (f) => [badge(f.severity, f.severity === 'error' ? 'bad' : 'warn'), ' ', ruleLink(f.rule), ' ', h('code', { text: f.name })] },
      { title: 'owner reference', cell: (f) => h('code', { text: `${f.ownerReference.kind}/${f.ownerReference.name}` }) },
      { title: 'message', cell: (f) => linkRules(f.message), class: 'reason' },
    ], det.lint));
  }

  view.append(cascadeSection(uid, graphDone, legend));

  view.append(h('h2', { text: 'History' }), historyTable(det.history.items));
  if (det.history.truncated) {
    const more = h('button', { type: 'button', text: 'Full history', onclick: async () => {
      more.disabled = true;
      try {
        const full = await api(det.links.history);
        more.replaceWith(historyTable(full.items));
      } catch (err) {
        more.replaceWith(errorBox(err));
      }
    } });
    view.append(more);
  }
  view.append(h('h2', {}, 'Audit rows ', h('a', { class: 'muted', href: '#/audit' + qs({ uid }), text: '(all)' })),
    auditTable(det.recentAudit));
  await graphDone;
}

// graphLegend says what the graph's colours and lines mean.
function graphLegend() {
  return h('div', { class: 'legend' },
    h('span', {}, h('span', { class: 'swatch self' }), 'this object'),
    h('span', {}, h('span', { class: 'swatch solid' }), 'solid'),
    h('span', {}, h('span', { class: 'swatch dangling' }), 'dangling (not in the mirror)'),
    h('span', {}, h('span', { class: 'swatch waiting' }), 'waiting (foreground deletion)'),
    h('span', {}, h('span', { class: 'swatch deleting' }), 'being deleted'),
    h('span', {}, h('span', { class: 'edgekey' }), 'controller'),
    h('span', {}, h('span', { class: 'edgekey ref' }), 'not controller'),
    h('span', {}, h('span', { class: 'edgekey block' }), 'blockOwnerDeletion'),
    h('span', {}, h('span', { class: 'swatch folded' }), `${groupMin} or more of one kind under one owner: click to open`),
    h('span', { text: 'arrows: owner → dependent' }),
    // Shown when the graph draws references by name.
    h('span', { class: 'reference-key', hidden: true }, h('span', { class: 'edgekey byname' }), 'reference by name: referrer → what it names'),
    // Shown while a delete is previewed.
    h('span', { class: 'cascade-key', hidden: true }, h('span', { class: 'swatch mark cascade-delete' }), 'the previewed delete takes it'),
    h('span', { class: 'cascade-key', hidden: true }, h('span', { class: 'swatch mark cascade-wait' }), 'the previewed delete waits for it'));
}

// graphNoteText says what the graph holds and how it is drawn.
function graphNoteText(g, gv) {
  let s = `${g.nodes.length} objects, ${g.edges.length} owner reference${g.edges.length === 1 ? '' : 's'}`;
  if (gv.references) s += `, ${gv.references} reference${gv.references === 1 ? '' : 's'} by name`;
  if (gv.groups) s += `; ${gv.groups} group${gv.groups === 1 ? '' : 's'} of ${groupMin} or more (click one to open it, its box to fold it)`;
  if (g.nodes.length > 150) s += ' (so many that edges may have no arrowheads: owners are above)';
  return s + '.';
}

// refKind is a kind as kubectl names a kind of a group: Bucket.storage.example.com.
function refKind(r) {
  return r.group ? `${r.kind}.${r.group}` : r.kind;
}

// refName is a reference's target's namespace/name; the claims of a
// StatefulSet's volumeClaimTemplates are a name and an ordinal.
function refName(r) {
  return (r.namespace ? r.namespace + '/' : '') + r.name + (r.prefix ? '<ordinal>' : '');
}

// refState says whether a reference's target exists: a missing target of
// an optional reference is only a warning.
function refState(r) {
  if (r.exists) return badge('exists', 'ok');
  if (r.optional) return badge('missing, optional', 'warn');
  return badge('dangling', 'bad');
}

// withReferences adds to g (of /graph) what the object references by name
// and what references it, as nodes and g.references. More than groupMin of
// one kind on one side are one node, which the lists spell out; a target
// the mirror does not hold is drawn dangling, and opens nothing.
function withReferences(g, o, det) {
  const known = new Set(g.nodes.map((n) => n.uid));
  const add = (n) => {
    if (known.has(n.uid)) return;
    known.add(n.uid);
    g.nodes.push({ namespace: '', beingDeleted: false, deletingDependents: false, missing: false, virtual: false, ...n });
  };
  const byKind = (items, kind) => {
    const m = new Map();
    for (const i of items) {
      const k = kind(i);
      if (!m.has(k)) m.set(k, []);
      m.get(k).push(i);
    }
    return m;
  };
  g.references = [];
  for (const [kind, rs] of byKind(det.references || [], refKind)) {
    if (rs.length >= groupMin) {
      const id = 'references:' + kind;
      const missing = rs.filter((r) => !r.exists).length;
      add({ uid: id, kind, name: '', inert: true, missing: missing > 0, label: `${kind} × ${rs.length}` + (missing ? `\n${missing} missing` : ''),
        full: `it references ${rs.length} ${kind} objects by name: listed below` });
      g.references.push({ from: o.uid, to: id, via: rs.length + ' references' });
      continue;
    }
    for (const r of rs) {
      const id = r.uid || `reference:${kind}/${refName(r)}`;
      add({ uid: id, kind, namespace: r.namespace, name: r.prefix ? r.name + '<ordinal>' : r.name, missing: !r.exists, inert: !r.uid,
        full: r.uid ? undefined : `${kind} ${refName(r)} (${r.exists ? 'the claims of its volumeClaimTemplates' : 'not in the mirror: a dangling reference'})` });
      g.references.push({ from: o.uid, to: id, via: r.via });
    }
  }
  for (const [kind, rs] of byKind(det.referencedBy || [], (r) => r.kind)) {
    if (rs.length >= groupMin) {
      const id = 'referrers:' + kind;
      add({ uid: id, kind, name: '', inert: true, label: `${kind} × ${rs.length}`, full: `${rs.length} ${kind} objects reference it by name: listed below` });
      g.references.push({ from: id, to: o.uid, via: rs.length + ' references' });
      continue;
    }
    for (const r of rs) {
      add({ uid: r.uid, kind: r.kind, namespace: r.namespace, name: r.name });
      g.references.push({ from: r.uid, to: o.uid, via: r.via });
    }
  }
}

// referencesSection lists what the object references by name and what
// references it, each by the field that names the other, and says when it
// was last referenced. An empty side is a sentence, not an empty table.
function referencesSection(det) {
  const refs = det.references || [];
  const by = det.referencedBy || [];
  const more = (truncated) => (truncated ? '+' : '');
  let last;
  if (by.length) {
    last = [`Referenced now, by ${by.length}${more(det.referencedByTruncated)} object${by.length === 1 ? '' : 's'}.`];
  } else if (det.lastReferenced) {
    last = ['Nothing references it now. It was last referenced ', when(det.lastReferenced), '.'];
  } else {
    last = ['Nothing references it now, and nothing did while kubegcd watched.'];
  }
  if (!refs.length) last.push(' It references nothing by name.');
  return h('section', { id: 'references-section' },
    h('h2', { text: 'References' }),
    h('p', { class: 'muted', id: 'last-referenced' }, last),
    by.length ? [h('h3', { text: `What references it (${by.length}${more(det.referencedByTruncated)})` }),
      table([
        { title: 'referenced by', cell: (r) => objLink(r) },
        { title: 'via', cell: (r) => h('code', { text: r.via }) },
      ], by, { id: 'referenced-by' })] : null,
    refs.length ? [h('h3', { text: `What it references (${refs.length}${more(det.referencesTruncated)})` }),
      table([
        { title: 'references', cell: (r) => r.uid ? h('a', { href: '#/objects/' + encodeURIComponent(r.uid), title: 'uid ' + r.uid, text: `${refKind(r)} ${refName(r)}` })
          : h('span', { text: `${refKind(r)} ${refName(r)}` }) },
        { title: 'via', cell: (r) => h('code', { text: r.via }) },
        { title: 'target', cell: refState },
      ], refs, { id: 'references' })] : null);
}

// rulesSection lists the cleanup rules that match the object now.
function rulesSection(det) {
  const rules = det.rules || [];
  const spared = new Set((det.sparedBy || []).map((s) => s.rule));
  const all = h('a', { class: 'muted', href: '#/rules', text: '(all rules)' });
  if (!rules.length) {
    return h('section', { id: 'rules-section' }, h('h2', {}, 'Cleanup rules ', all),
      h('p', { class: 'muted', id: 'no-rules', text: 'No cleanup rule matches it now.' }));
  }
  return h('section', { id: 'rules-section' },
    h('h2', {}, `Cleanup rules that match it (${rules.length}) `, all),
    table([
      { title: 'rule', cell: (m) => h('a', { href: ruleHref(m.rule) }, h('code', { text: m.rule })), class: 'nowrap' },
      { title: 'reason', cell: (m) => [m.finding ? [badge('finding', 'warn'), ' '] : null,
        spared.has(m.rule) ? [h('span', { class: 'badge ok spared', text: 'spared', title: 'restored from the copy of an object this rule deleted: the rule leaves it alone while its text is unchanged' }), ' '] : null,
        linkRules(m.reason)], class: 'reason' },
      { title: 'since', cell: (m) => when(m.since), class: 'nowrap' },
    ], rules, { id: 'object-rules' }));
}

function historyTable(items) {
  return table([
    { title: 'time', cell: (e) => when(e.time), class: 'nowrap' },
    { title: 'event', cell: (e) => badge(e.event, e.event === 'deleted' ? 'bad' : '') },
    { title: 'owners', cell: (e) => (e.ownerReferences || []).map((r) => h('div', {}, h('code', { text: `${r.kind}/${r.name}` }),
      r.controller ? ' controller' : '', r.blockOwnerDeletion ? ' block' : '')) },
    { title: 'finalizers', cell: (e) => (e.finalizers || []).join(', ') },
    { title: 'deletion', cell: (e) => e.deletionTimestamp ? when(e.deletionTimestamp) : (e.holder ? 'holder ' + e.holder : '') },
  ], items, { id: 'history', empty: 'no history recorded' });
}

function auditTable(items) {
  return table([
    { title: 'time', cell: (e) => when(e.time), class: 'nowrap' },
    { title: 'controller', cell: (e) => e.controller },
    { title: 'rule', cell: decisionRule, class: 'nowrap' },
    { title: 'action', cell: (e) => e.action },
    { title: 'outcome', cell: (e) => [badge(e.outcome, e.outcome === 'failed' ? 'bad' : ''), e.dryRun && e.outcome !== 'dry-run' ? badge('dry-run') : null] },
    { title: 'reason', cell: (e) => [linkRules(e.reason), e.error ? h('div', { class: 'bad', text: e.error }) : null], class: 'reason' },
    { title: 'by', cell: (e) => h('span', { class: 'muted', text: e.instance }) },
  ], items, { id: 'audit', empty: 'no audit rows' });
}

// cascadeSection previews what a delete with each propagation would take,
// and marks it on the graph (graphDone resolves to the graph's view, or
// null) with legend's cascade keys shown; Clear takes the marks away.
function cascadeSection(uid, graphDone, legend) {
  const out = h('div', { id: 'cascade' });
  const buttons = ['background', 'foreground', 'orphan'].map((p) => h('button', { type: 'button', dataset: { propagation: p },
    text: 'Preview ' + p + ' delete', onclick: () => preview(p) }));
  const mark = async (marks) => {
    const gv = await graphDone;
    if (gv) gv.setMarks(marks);
    for (const k of legend.querySelectorAll('.cascade-key')) k.hidden = !marks.size;
  };
  const clear = h('button', { type: 'button', id: 'cascade-clear', text: 'Clear the preview', hidden: true, onclick: () => {
    for (const b of buttons) b.classList.remove('primary');
    out.replaceChildren();
    clear.hidden = true;
    mark(new Map());
  } });
  async function preview(p) {
    for (const b of buttons) b.classList.toggle('primary', b.dataset.propagation === p);
    out.replaceChildren(h('p', { class: 'muted', text: 'walking the dependents…' }));
    try {
      const c = await api(`/objects/${encodeURIComponent(uid)}/cascade` + qs({ propagation: p }));
      // The object itself goes in every propagation.
      const marks = new Map([[uid, new Set(['cascade-delete'])]]);
      for (const i of c.items) if (i.action === 'delete') marks.set(i.target.uid, new Set(['cascade-delete']));
      for (const b of c.blockedBy || []) {
        if (!marks.has(b.target.uid)) marks.set(b.target.uid, new Set());
        marks.get(b.target.uid).add('cascade-wait');
      }
      await mark(marks);
      clear.hidden = false;
      out.replaceChildren(...cascadeView(c, p, true));
    } catch (err) {
      out.replaceChildren(errorBox(err));
    }
  }
  return h('section', {}, h('h2', { text: 'Preview a delete' }),
    h('p', { class: 'muted', text: 'What the ownership GC would do to the dependents if this object were deleted now, decided by the collector\'s own rules from the mirror. Nothing is deleted.' }),
    h('div', { class: 'toolbar' }, buttons, clear), out);
}

// gonePage shows an object the mirror no longer holds, from its history.
async function gonePage(view, ctx, uid) {
  setTitle(uid);
  view.append(h('h1', { id: 'object-title', text: 'Object ' + uid }));
  let hist;
  try {
    hist = await api(`/objects/${encodeURIComponent(uid)}/history`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      view.append(h('div', { class: 'note', text: 'Neither the mirror nor the history knows this UID: it may be an owner that never existed in this cluster (a dangling reference).' }));
      return;
    }
    throw err;
  }
  if (!ctx.isCurrent()) return;
  if (hist.target) {
    view.querySelector('h1').textContent = targetText(hist.target);
    setTitle(targetText(hist.target));
  }
  const deleted = hist.items.filter((e) => e.event === 'deleted').pop();
  view.append(h('div', { class: 'why', id: 'why', text: 'It is gone: the mirror no longer holds it.' +
    (deleted ? ' Its owners and dependents as they were just before it went, its history and audit rows follow.' : ' Its history and audit rows follow.') }));
  // The copy kept of it, if any, is read beside the graph.
  const copyBox = h('section', { id: 'copy-section', hidden: true });
  view.append(copyBox);
  const copyDone = copySection(copyBox, uid, hist).catch((err) => {
    copyBox.hidden = false;
    copyBox.append(errorBox(err));
  });
  if (deleted) {
    // The graph as history shows it a millisecond before the deletion:
    // what owned it, what it owned, when it went.
    const at = new Date(Date.parse(deleted.time) - 1).toISOString();
    const box = h('div', { id: 'graph', role: 'img', 'aria-label': 'ownership graph just before the deletion' });
    view.append(h('h2', {}, 'Ownership graph ', h('span', { class: 'muted', text: 'just before it was deleted' })), graphLegend(), box);
    try {
      const g = await api('/graph' + qs({ uid, at }));
      if (!ctx.isCurrent()) return;
      // /graph lists an object only with an edge: one that had none is
      // drawn alone, as the live object's page does.
      if (hist.target && !g.nodes.some((n) => n.uid === uid)) {
        const t = hist.target;
        g.nodes.unshift({ uid, kind: t.kind, namespace: t.namespace || '', name: t.name, beingDeleted: false, deletingDependents: false, missing: false, virtual: false });
      }
      await drawGraph(box, g, uid, (id) => { location.hash = '#/objects/' + encodeURIComponent(id); });
    } catch (err) {
      box.replaceChildren(errorBox(err));
    }
  }
  view.append(h('h2', { text: 'History' }), historyTable(hist.items),
    h('h2', {}, 'Audit rows ', h('a', { class: 'muted', href: '#/audit' + qs({ uid }), text: '(all)' })), auditTable(hist.audit || []));
  await copyDone;
}
