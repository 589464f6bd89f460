// The namespace map: every owner tree in one namespace, drawn as the object
// page draws one, with its pending deletions and stuck deletions marked and
// a filter by kind.
import { h, api, qs, table, objLink, setTitle, go, paramsObject, errorBox, linkRules } from './util.js';
import { drawGraph, foldedSize, groupMin, markWords } from './graph.js';

// mapMaxRead is the most objects read for a map, mapMaxDrawn the most
// drawn once groups are folded: dagre lays out 1,000 in about two seconds.
const mapMaxRead = 20000;
const mapMaxDrawn = 1000;

export async function mapPage(view, ctx) {
  const p = ctx.params;
  const filter = paramsObject(p, ['namespace', 'kind']);
  setTitle(filter.namespace ? 'Map of ' + filter.namespace : 'Map');
  view.append(h('h1', { id: 'map-title', text: filter.namespace ? `Namespace ${filter.namespace}` : 'Namespace map' }),
    h('p', { class: 'muted', text: 'Every owner tree in a namespace: owners above, dependents below, ' +
      'objects the collectors would delete and deletions that do not finish marked. Objects without owners or dependents are left out.' }));
  if (!filter.namespace) return namespaceList(view, ctx);

  const ns = filter.namespace;
  const [g, pending, stuck] = await Promise.all([
    api('/graph' + qs({ namespace: ns, limit: mapMaxRead })),
    api('/pending' + qs({ namespace: ns, limit: 10000 })),
    api('/stuck' + qs({ namespace: ns, limit: 10000 })),
  ]);
  if (!ctx.isCurrent()) return;
  const kinds = [...new Set(g.nodes.map((n) => n.kind))].sort();
  const kindSelect = h('select', { name: 'kind' }, h('option', { value: '', text: 'every kind' }),
    kinds.map((k) => h('option', { value: k, text: k })));
  kindSelect.value = filter.kind || '';
  const nsInput = h('input', { name: 'namespace', value: ns, spellcheck: 'false' });
  view.append(h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    go('/map', { namespace: nsInput.value.trim(), kind: kindSelect.value });
  } }, h('label', {}, 'namespace', nsInput), h('label', {}, 'trees holding a', kindSelect),
  h('button', { type: 'submit', class: 'primary', text: 'Show' })));
  kindSelect.addEventListener('change', () => go('/map', { namespace: ns, kind: kindSelect.value }));

  const dot = h('a', { href: '/graph' + qs({ namespace: ns, format: 'dot' }), text: 'the graph in DOT' });
  if (g.truncated) {
    view.append(h('div', { class: 'note', id: 'map-too-large' }, `Over ${mapMaxRead.toLocaleString()} objects in ${ns}: too many to draw. `,
      dot, ' holds them all (up to the API\'s limit).'));
    return;
  }
  const shown = filter.kind ? treesHolding(g, filter.kind) : g;

  // Marks: what a collector would delete, and deletions that do not finish.
  const marks = new Map();
  const mark = (uid, k) => {
    if (!marks.has(uid)) marks.set(uid, new Set());
    marks.get(uid).add(k);
  };
  const garbage = pending.items.filter((i) => i.action === 'delete');
  for (const i of garbage) mark(i.target.uid, 'garbage');
  for (const i of stuck.items) mark(i.target.uid, 'stuck');
  const inMap = new Set(shown.nodes.map((n) => n.uid));
  const count = (items) => items.filter((i) => inMap.has(i.target.uid)).length;

  const size = foldedSize(shown);
  view.append(h('p', { id: 'map-summary' },
    `${shown.nodes.length} objects, ${shown.edges.length} references`, filter.kind ? ` in the trees holding a ${filter.kind}` : '',
    `; ${count(garbage)} pending deletion, ${count(stuck.items)} stuck.`));
  if (shown.nodes.length === 0) {
    view.append(h('div', { class: 'note', text: filter.kind ? `No owner tree in ${ns} holds a ${filter.kind}.` : `No object in ${ns} has an owner or a dependent.` }));
  } else if (size > mapMaxDrawn) {
    view.append(h('div', { class: 'note', id: 'map-too-large' },
      `${size.toLocaleString()} nodes even with groups folded: too many to draw. Narrow by kind, or download `, dot, '.'));
  } else {
    const box = h('div', { id: 'graph', role: 'img', 'aria-label': `ownership graph of namespace ${ns}: owners above, dependents below; click a node to open it` });
    if (size > 150) box.classList.add('big');
    const note = h('span', { class: 'muted' });
    view.append(mapLegend(), box, h('div', { class: 'graphbar' }, note));
    try {
      const gv = await drawGraph(box, shown, '', (id) => { location.hash = '#/objects/' + encodeURIComponent(id); });
      gv.setMarks(marks);
      note.replaceChildren(gv.groups ? `${gv.groups} group${gv.groups === 1 ? '' : 's'} of ${groupMin} or more: click one to open it, its box to fold it. ` : '',
        'Scroll to zoom, drag to pan. ', h('button', { type: 'button', text: 'Fit all', onclick: () => gv.cy.fit(undefined, 20) }),
        ' ', dot);
    } catch (err) {
      box.replaceChildren(errorBox(err));
    }
  }
  // The marked objects as lists too: links a keyboard reaches.
  const listed = (items) => items.filter((i) => inMap.has(i.target.uid));
  view.append(h('h2', { text: `Pending deletions (${count(garbage)})` }), table([
    { title: 'object', cell: (i) => objLink(i.target) },
    { title: 'controller', cell: (i) => i.controller },
    { title: 'reason', cell: (i) => linkRules(i.reason), class: 'reason' },
  ], listed(garbage).slice(0, 100), { id: 'map-garbage', empty: 'none' }),
  h('h2', { text: `Stuck deletions (${count(stuck.items)})` }), table([
    { title: 'object', cell: (i) => objLink(i.target) },
    { title: 'state', cell: (i) => i.state },
  ], listed(stuck.items).slice(0, 100), { id: 'map-stuck', empty: 'none' }));
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
