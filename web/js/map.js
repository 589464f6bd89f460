// The namespace map: every object of one namespace. Its owner trees are
// drawn as the object page draws one; the objects outside any tree are
// listed by kind. Its pending decisions and stuck deletions are marked and
// listed, with a filter by kind.
import { h, api, qs, table, objLink, setTitle, go, paramsObject, errorBox, linkRules, badge } from './util.js';
import { drawGraph, foldedSize, groupMin, markWords } from './graph.js';

// mapMaxRead is the most objects read for a map, mapMaxDrawn the most
// drawn once groups are folded: dagre lays out 1,000 in about two seconds.
const mapMaxRead = 20000;
const mapMaxDrawn = 1000;
// listMax is the most rows a list under the map shows, outsideMax the most
// objects of one kind listed outside the trees; the Pending and Stuck pages
// page through the rest.
const listMax = 100;
const outsideMax = 200;

const plural = (n, one, many) => `${n.toLocaleString()} ${n === 1 ? one : many || one + 's'}`;

export async function mapPage(view, ctx) {
  const p = ctx.params;
  const filter = paramsObject(p, ['namespace', 'kind']);
  setTitle(filter.namespace ? 'Map of ' + filter.namespace : 'Map');
  view.append(h('h1', { id: 'map-title', text: filter.namespace ? `Namespace ${filter.namespace}` : 'Namespace map' }),
    h('p', { class: 'muted', text: 'Every object of a namespace: its owner trees drawn, owners above and dependents below; ' +
      'the objects outside any tree listed by kind; what the collectors would do and deletions that do not finish, marked and listed.' }));
  if (!filter.namespace) return namespaceList(view, ctx);

  const ns = filter.namespace;
  // isolated: the objects with neither owners nor dependents come too, so
  // that the map covers the whole namespace.
  const [all, pending, stuck] = await Promise.all([
    api('/graph' + qs({ namespace: ns, isolated: 'true', limit: mapMaxRead })),
    api('/pending' + qs({ namespace: ns, limit: 10000 })),
    api('/stuck' + qs({ namespace: ns, limit: 10000 })),
  ]);
  if (!ctx.isCurrent()) return;
  const kinds = [...new Set(all.nodes.map((n) => n.kind))].sort();
  const kindSelect = h('select', { name: 'kind' }, h('option', { value: '', text: 'every kind' }),
    kinds.map((k) => h('option', { value: k, text: k })));
  kindSelect.value = filter.kind || '';
  const nsInput = h('input', { name: 'namespace', value: ns, spellcheck: 'false' });
  view.append(h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    go('/map', { namespace: nsInput.value.trim(), kind: kindSelect.value });
  } }, h('label', {}, 'namespace', nsInput), h('label', {}, 'kind', kindSelect),
  h('button', { type: 'submit', class: 'primary', text: 'Show' })));
  kindSelect.addEventListener('change', () => go('/map', { namespace: ns, kind: kindSelect.value }));

  // The trees are the objects with an edge; the rest stand alone.
  const inTree = new Set(all.edges.flatMap((e) => [e.owner, e.dependent]));
  const trees = { nodes: all.nodes.filter((n) => inTree.has(n.uid)), edges: all.edges };
  const shown = filter.kind ? treesHolding(trees, filter.kind) : trees;
  const outside = all.nodes.filter((n) => !inTree.has(n.uid) && (!filter.kind || n.kind === filter.kind));

  // Marks: what a collector would delete, and deletions that do not finish.
  const marks = new Map();
  const mark = (uid, k) => {
    if (!marks.has(uid)) marks.set(uid, new Set());
    marks.get(uid).add(k);
  };
  for (const i of pending.items) if (i.action === 'delete') mark(i.target.uid, 'garbage');
  for (const i of stuck.items) mark(i.target.uid, 'stuck');
  // The lists count what /pending and /stuck count for the namespace; a
  // kind narrows them to the objects shown.
  const shownUIDs = new Set([...shown.nodes, ...outside].map((n) => n.uid));
  const listed = (items) => (filter.kind ? items.filter((i) => shownUIDs.has(i.target.uid)) : items);
  const pendingItems = listed(pending.items);
  const stuckItems = listed(stuck.items);
  // A list the API cut says so: 10,000+.
  const countOf = (items, truncated) => items.length.toLocaleString() + (truncated && !filter.kind ? '+' : '');
  const pendingCount = countOf(pendingItems, !!pending.next);
  const stuckCount = countOf(stuckItems, stuck.truncated);

  const dot = h('a', { href: '/graph' + qs({ namespace: ns, format: 'dot' }), text: 'the graph in DOT' });
  if (all.truncated) {
    view.append(h('p', { id: 'map-summary' }, `More than ${plural(mapMaxRead, 'object')}; `,
      `${pendingCount} pending decision${pendingItems.length === 1 ? '' : 's'}, ${stuckCount} stuck.`),
    h('div', { class: 'note', id: 'map-too-large' }, `Over ${mapMaxRead.toLocaleString()} objects in ${ns}: too many to draw. `,
      dot, ' holds its owner trees (up to the API\'s limit).'));
  } else {
    const objects = shown.nodes.length + outside.length;
    view.append(h('p', { id: 'map-summary' },
      `${plural(objects, 'object')}, ${plural(shown.edges.length, 'reference')}, ${outside.length.toLocaleString()} outside any owner tree`,
      filter.kind ? ` (the trees holding a ${filter.kind}, and the ${filter.kind} objects outside them)` : '',
      `; ${pendingCount} pending decision${pendingItems.length === 1 ? '' : 's'}, ${stuckCount} stuck.`));
    await drawTrees(view, ctx, shown, marks, filter, ns, dot);
    if (!ctx.isCurrent()) return;
  }

  // The pending and stuck as lists too: links a keyboard reaches.
  view.append(...[h('h2', { text: `Pending decisions (${pendingCount})` }), table([
    { title: 'object', cell: (i) => objLink(i.target) },
    { title: 'controller', cell: (i) => i.controller },
    { title: 'action', cell: (i) => i.action },
    { title: 'reason', cell: (i) => linkRules(i.reason), class: 'reason' },
  ], pendingItems.slice(0, listMax), { id: 'map-garbage', empty: 'none' }),
  moreOn(pendingItems.length, '#/pending' + qs({ namespace: ns, kind: filter.kind }), 'the Pending page'),
  h('h2', { text: `Stuck deletions (${stuckCount})` }), table([
    { title: 'object', cell: (i) => objLink(i.target) },
    { title: 'state', cell: (i) => i.state },
  ], stuckItems.slice(0, listMax), { id: 'map-stuck', empty: 'none' }),
  moreOn(stuckItems.length, '#/stuck' + qs({ namespace: ns, kind: filter.kind }), 'the Stuck page')].filter(Boolean));
  if (!all.truncated) view.append(outsideList(outside, marks, pending.items));
}

// drawTrees draws the owner trees of shown, with marks, or says why not.
async function drawTrees(view, ctx, shown, marks, filter, ns, dot) {
  const size = foldedSize(shown);
  if (shown.nodes.length === 0) {
    view.append(h('div', { class: 'note', text: filter.kind ? `No owner tree in ${ns} holds a ${filter.kind}.` : `No object in ${ns} has an owner or a dependent.` }));
    return;
  }
  if (size > mapMaxDrawn) {
    view.append(h('div', { class: 'note', id: 'map-too-large' },
      `${size.toLocaleString()} nodes even with groups folded: too many to draw. Narrow by kind, or download `, dot, '.'));
    return;
  }
  const box = h('div', { id: 'graph', role: 'img', 'aria-label': `ownership graph of namespace ${ns}: owners above, dependents below; click a node to open it` });
  if (size > 150) box.classList.add('big');
  const note = h('span', { class: 'muted' });
  view.append(mapLegend(), box, h('div', { class: 'graphbar' }, note));
  try {
    const gv = await drawGraph(box, shown, '', (id) => { location.hash = '#/objects/' + encodeURIComponent(id); });
    if (!ctx.isCurrent()) return;
    gv.setMarks(marks);
    note.replaceChildren(gv.groups ? `${gv.groups} group${gv.groups === 1 ? '' : 's'} of ${groupMin} or more: click one to open it, its box to fold it. ` : '',
      'Scroll to zoom, drag to pan. ', h('button', { type: 'button', text: 'Fit all', onclick: () => gv.fit() }),
      ' ', dot);
  } catch (err) {
    box.replaceChildren(errorBox(err));
  }
}

// moreOn says that a list under the map shows its first listMax of n, and
// where the rest are.
function moreOn(n, href, page) {
  if (n <= listMax) return null;
  return h('p', { class: 'muted' }, `The first ${listMax} of ${n.toLocaleString()}; `, h('a', { href, text: page }), ' lists them all.');
}

// outsideList lists the objects outside any owner tree, by kind: those
// pending or stuck first, each with its marks, then by name.
function outsideList(outside, marks, pendingItems) {
  const actions = new Map();
  for (const i of pendingItems) {
    if (!actions.has(i.target.uid)) actions.set(i.target.uid, []);
    actions.get(i.target.uid).push(i.action);
  }
  const byKind = new Map();
  for (const n of outside) {
    if (!byKind.has(n.kind)) byKind.set(n.kind, []);
    byKind.get(n.kind).push(n);
  }
  const flagged = (n) => (marks.has(n.uid) || actions.has(n.uid) ? 0 : 1);
  const section = h('section', { id: 'map-outside' }, h('h2', { text: `Outside any owner tree (${outside.length.toLocaleString()})` }),
    h('p', { class: 'muted', text: 'Objects with neither owners nor dependents, by kind.' }));
  if (outside.length === 0) section.append(h('div', { class: 'note', text: 'none' }));
  for (const kind of [...byKind.keys()].sort()) {
    const objs = byKind.get(kind).sort((a, b) => flagged(a) - flagged(b) || a.name.localeCompare(b.name));
    section.append(h('details', { class: 'kind', dataset: { kind }, open: objs.length <= 20 },
      h('summary', { text: `${kind} (${objs.length.toLocaleString()})` }),
      h('ul', { class: 'objects' }, objs.slice(0, outsideMax).map((n) => h('li', {},
        objLink({ kind: n.kind, namespace: n.namespace, name: n.name, uid: n.uid }),
        (actions.get(n.uid) || []).map((a) => [' ', badge(a === 'delete' ? markWords.garbage : 'pending ' + a, 'bad')]),
        marks.get(n.uid)?.has('stuck') ? [' ', badge(markWords.stuck, 'warn')] : null))),
      objs.length > outsideMax ? h('p', { class: 'muted', text: `and ${(objs.length - outsideMax).toLocaleString()} more` }) : null));
  }
  return section;
}

// treesHolding keeps the owner trees (connected parts of g) that hold an
// object of kind.
function treesHolding(g, kind) {
  const parent = new Map(g.nodes.map((n) => [n.uid, n.uid]));
  const find = (x) => {
    while (parent.get(x) !== x) {
      parent.set(x, parent.get(parent.get(x)));
      x = parent.get(x);
    }
    return x;
  };
  for (const e of g.edges) {
    if (parent.has(e.owner) && parent.has(e.dependent)) parent.set(find(e.owner), find(e.dependent));
  }
  const keep = new Set(g.nodes.filter((n) => n.kind === kind).map((n) => find(n.uid)));
  const nodes = g.nodes.filter((n) => keep.has(find(n.uid)));
  const uids = new Set(nodes.map((n) => n.uid));
  return { nodes, edges: g.edges.filter((e) => uids.has(e.owner) && uids.has(e.dependent)) };
}

function mapLegend() {
  return h('div', { class: 'legend' },
    h('span', {}, h('span', { class: 'swatch solid' }), 'solid'),
    h('span', {}, h('span', { class: 'swatch dangling' }), 'dangling (no such owner)'),
    h('span', {}, h('span', { class: 'swatch waiting' }), 'waiting (foreground deletion)'),
    h('span', {}, h('span', { class: 'swatch deleting' }), 'being deleted'),
    h('span', {}, h('span', { class: 'swatch mark garbage' }), markWords.garbage),
    h('span', {}, h('span', { class: 'swatch mark stuck' }), markWords.stuck),
    h('span', {}, h('span', { class: 'swatch folded' }), `${groupMin} or more of one kind under one owner`),
    h('span', {}, h('span', { class: 'edgekey' }), 'controller'),
    h('span', {}, h('span', { class: 'edgekey ref' }), 'not controller'),
    h('span', {}, h('span', { class: 'edgekey block' }), 'blockOwnerDeletion'));
}

// namespaceList offers each namespace's map.
async function namespaceList(view, ctx) {
  const r = await api('/objects' + qs({ kind: 'namespaces', limit: 10000 }));
  if (!ctx.isCurrent()) return;
  const names = r.items.map((o) => o.name).sort();
  view.append(h('h2', { text: `Namespaces (${names.length})` }),
    h('ul', { class: 'namespaces', id: 'namespaces' }, names.map((n) => h('li', {}, h('a', { href: '#/map' + qs({ namespace: n }), text: n })))));
}
