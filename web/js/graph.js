// The ownership graph: laid out by dagre in layers (owners above,
// dependents below), drawn by cytoscape at dagre's positions. Many
// dependents of one kind under one owner fold into one node, opened by a
// click. References by name (g.references) are drawn beside the owner
// edges in a style of their own: referrers above, what they name below.

// Colours by state; app.css's legend swatches use the same.
const colours = {
  solid: ['#dff3e4', '#1a7f37'],
  dangling: ['#ffe3e3', '#c8232c'],
  waiting: ['#fff1c2', '#9a6700'],
  deleting: ['#e8e1f7', '#6639ba'],
};

// Marks a page puts on nodes beside their state: what a previewed delete
// would take or wait for, pending deletions, stuck deletions. Each is an
// underlay, so that the state's colour stays; app.css's swatches match.
const markColours = {
  'cascade-delete': '#cf222e',
  'cascade-wait': '#0969da',
  garbage: '#cf222e',
  stuck: '#bf8700',
};
export const markWords = {
  'cascade-delete': 'would be deleted',
  'cascade-wait': 'would be waited for',
  garbage: 'pending deletion',
  stuck: 'stuck',
};

// groupMin is the fewest dependents of one kind under one owner that fold
// into one node: a row of more is unreadable at any zoom.
export const groupMin = 21;

// Nodes of a graph of more than bigGraph are drawn the fast way: straight
// edges without arrowheads, one pixel per pixel.
const bigGraph = 150;

// nodeState names a node's colour: dangling (no such owner in the mirror),
// waiting (deleted in the foreground, waiting for its dependents), being
// deleted, or solid.
function nodeState(n) {
  if (n.missing || n.virtual) return 'dangling';
  if (n.deletingDependents) return 'waiting';
  if (n.beingDeleted) return 'deleting';
  return 'solid';
}

// A group shows the most alarming state among its members.
const stateOrder = ['dangling', 'waiting', 'deleting', 'solid'];

function edgeLabel(e) {
  return [e.controller ? 'controller' : '', e.blockOwnerDeletion ? 'block' : ''].filter(Boolean).join(' + ');
}

// shortVia is a reference's field as an edge's label: its last part
// (volumes[].configMap → configMap), which names what the field holds.
function shortVia(via) {
  const parts = String(via || '').split('.');
  return parts[parts.length - 1].replace(/\[\]$/, '');
}

// referenceEdges are g.references ({from, to, via}) between the nodes as
// drawn: one edge per referrer and target, its fields merged.
function referenceEdges(g, grouped) {
  const out = new Map();
  for (const r of g.references || []) {
    const s = grouped.drawnAs.get(r.from);
    const t = grouped.drawnAs.get(r.to);
    if (s === undefined || t === undefined || s === t) continue;
    const k = s + '\u0000' + t;
    if (!out.has(k)) out.set(k, { from: s, to: t, vias: new Set() });
    out.get(k).vias.add(r.via);
  }
  return [...out.values()];
}

function referenceLabel(e) {
  const vias = [...new Set([...e.vias].map(shortVia))];
  return vias.length <= 2 ? vias.join(', ') : `${vias.length} fields`;
}

// measure returns a label's size in px at the graph's font, so that each
// node fits its label.
const font = '10px system-ui, sans-serif';
let measurer = null;
function measure(label) {
  if (!measurer) {
    measurer = document.createElement('canvas').getContext('2d');
    measurer.font = font;
  }
  const lines = label.split('\n');
  return { w: Math.max(...lines.map((l) => measurer.measureText(l).width)), h: lines.length * 12 };
}

// A group's label is bold, about this much wider than measure says.
const boldWidth = 1.12;

function short(s, n) {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

function push(m, k, v) {
  if (!m.has(k)) m.set(k, []);
  m.get(k).push(v);
}

function counted(counts, words) {
  return Object.entries(counts).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${words ? words[k] : k}`).join(' · ');
}

// groupGraph folds g for drawing. A node with exactly one owner is keyed
// by its owner (as drawn) and its kind; more than groupMin nodes of one
// key fold into one group node, unless the key is in open, when they are
// drawn in a box. A folded member's own dependents hang from its group,
// and fold in turn: 480 ReplicaSets' Pods are one "Pod × 960".
function groupGraph(g, open) {
  const byUID = new Map(g.nodes.map((n) => [n.uid, n]));
  const ownersOf = new Map();
  for (const e of g.edges) {
    if (e.owner !== e.dependent && byUID.has(e.owner) && byUID.has(e.dependent)) push(ownersOf, e.dependent, e.owner);
  }
  const single = new Map();
  for (const [uid, owners] of ownersOf) {
    const distinct = [...new Set(owners)];
    if (distinct.length === 1) single.set(uid, distinct[0]);
  }
  // Depth along single owners; a cycle of them starts at depth 0.
  const depth = new Map();
  const depthOf = (uid, seen = new Set()) => {
    if (depth.has(uid)) return depth.get(uid);
    const o = single.get(uid);
    let d = 0;
    if (o !== undefined && !seen.has(o)) {
      seen.add(uid);
      d = depthOf(o, seen) + 1;
    }
    depth.set(uid, d);
    return d;
  };
  const levels = [];
  for (const n of g.nodes) push2(levels, depthOf(n.uid), n);
  const drawnAs = new Map(); // uid → the id it is drawn as: its own, or its group's
  const boxOf = new Map(); // uid → the open box it is drawn in
  const groups = new Map(); // group id → {id, key, kind, owner, members}
  const boxes = new Map(); // box id → {id, key, kind, members}
  for (const level of levels) {
    if (!level) continue;
    const byKey = new Map();
    for (const n of level) {
      const o = single.get(n.uid);
      if (o === undefined || !drawnAs.has(o)) {
        drawnAs.set(n.uid, n.uid);
        continue;
      }
      push(byKey, drawnAs.get(o) + '\u0000' + n.kind, n);
    }
    for (const [key, members] of byKey) {
      if (members.length < groupMin) {
        for (const n of members) drawnAs.set(n.uid, n.uid);
        continue;
      }
      const owner = drawnAs.get(single.get(members[0].uid));
      if (open.has(key)) {
        const id = 'box:' + key;
        boxes.set(id, { id, key, kind: members[0].kind, owner, members });
        for (const n of members) {
          drawnAs.set(n.uid, n.uid);
          boxOf.set(n.uid, id);
        }
      } else {
        const id = 'group:' + key;
        groups.set(id, { id, key, kind: members[0].kind, owner, members });
        for (const n of members) drawnAs.set(n.uid, id);
      }
    }
  }
  const edges = new Map();
  for (const e of g.edges) {
    const s = drawnAs.get(e.owner);
    // The owner of an open box points at the box, not at each member: 500
    // edges into a grid hide it.
    const t = boxOf.get(e.dependent) && boxes.get(boxOf.get(e.dependent)).owner === s ? boxOf.get(e.dependent) : drawnAs.get(e.dependent);
    if (s === undefined || t === undefined || s === t) continue;
    const k = s + '\u0000' + t;
    const x = edges.get(k);
    if (x) {
      x.controller = x.controller || e.controller;
      x.blockOwnerDeletion = x.blockOwnerDeletion || e.blockOwnerDeletion;
      x.count++;
    } else {
      edges.set(k, { owner: s, dependent: t, controller: e.controller, blockOwnerDeletion: e.blockOwnerDeletion, count: 1 });
    }
  }
  return { byUID, drawnAs, boxOf, groups, boxes, edges: [...edges.values()] };
}

// foldedSize is how many nodes g draws with every group folded.
export function foldedSize(g) {
  const grouped = groupGraph(g, new Set());
  return new Set(grouped.drawnAs.values()).size;
}

function push2(arr, i, v) {
  if (!arr[i]) arr[i] = [];
  arr[i].push(v);
}

function describe(n) {
  return `${n.kind} ${n.namespace ? n.namespace + '/' : ''}${n.name}`;
}

const style = (big) => [
  { selector: 'node', style: {
    shape: 'round-rectangle', label: 'data(label)', 'text-wrap': 'wrap', 'text-valign': 'center', 'text-halign': 'center',
    'font-size': 10, 'font-family': 'system-ui, sans-serif',
    'background-color': colours.solid[0], 'border-width': 2, 'border-color': colours.solid[1], color: '#1d232a',
    'min-zoomed-font-size': 6,
  } },
  // A box's size is its members'.
  { selector: 'node[w]', style: { width: 'data(w)', height: 'data(h)' } },
  ...Object.entries(colours).map(([k, [bg, border]]) => ({ selector: 'node.' + k, style: { 'background-color': bg, 'border-color': border } })),
  { selector: 'node.dangling', style: { 'border-style': 'dashed' } },
  // A group is a stack of its members: a double border, its count in bold.
  { selector: 'node.group', style: { 'border-style': 'double', 'border-width': 5, 'font-weight': 'bold' } },
  { selector: 'node.box', style: {
    'background-color': '#f3f6f9', 'background-opacity': 0.7, 'border-style': 'dotted', 'border-color': '#57606a', 'border-width': 2,
    'text-valign': 'top', 'text-halign': 'center', 'text-margin-y': -4, 'font-weight': 'bold', padding: 10,
  } },
  { selector: 'node.self', style: { 'border-width': 4, 'border-color': '#0969da', 'font-weight': 'bold' } },
  ...Object.entries(markColours).map(([k, c]) => ({ selector: 'node.' + k, style: {
    'underlay-color': c, 'underlay-opacity': 0.45, 'underlay-padding': 6, 'underlay-shape': 'round-rectangle',
  } })),
  { selector: 'edge', style: {
    // haystack edges, straight and without arrowheads, draw in about
    // half the time of others on a large graph; owners stay above.
    'curve-style': big ? 'haystack' : 'bezier', 'target-arrow-shape': big ? 'none' : 'triangle', width: 1.5, 'line-color': '#888',
    'target-arrow-color': '#888', label: 'data(label)', 'font-size': 8, 'text-background-color': '#fff',
    'text-background-opacity': 0.9, 'text-background-padding': '1px', color: '#444', 'min-zoomed-font-size': 6,
  } },
  { selector: 'edge.controller', style: { width: 3, 'line-color': '#444', 'target-arrow-color': '#444' } },
  { selector: 'edge.ref', style: { 'line-style': 'dashed' } },
  { selector: 'edge.block', style: { 'line-color': '#c8232c', 'target-arrow-color': '#c8232c' } },
  // A reference by name: teal, long dashes, an open arrowhead; app.css's
  // .edgekey.byname matches.
  { selector: 'edge.reference', style: {
    width: 2, 'line-color': '#1b7c83', 'target-arrow-color': '#1b7c83', 'line-style': 'dashed', 'line-dash-pattern': [7, 4],
    'target-arrow-shape': big ? 'none' : 'vee', color: '#155e63',
    // Along the edge: the labels of a fan of references do not overlap.
    'text-rotation': 'autorotate',
  } },
];

// drawGraph draws g ({nodes, edges} of /graph, and references: [{from,
// to, via}] between its nodes, if any) into container and resolves once
// laid out to a view: {cy, groups, references, setMarks(marks),
// collapseAll(), fit()}. Clicking a node calls open with its UID, unless
// the node is inert; clicking a group opens it in a box, clicking the box
// folds it again. marks maps a UID to the mark classes of markColours it
// carries. When the container changes size (a window narrowed, a phone
// turned) the graph is fitted again, unless the reader has zoomed or panned
// it since; fit() shows it all and makes that the view a resize keeps.
export function drawGraph(container, g, selfUID, open) {
  const view = { cy: null, groups: 0, marks: new Map(), opened: new Set(), moved: false, all: false };
  view.setMarks = (marks) => {
    view.marks = marks || new Map();
    if (view.cy) applyMarks(view);
  };
  view.collapseAll = () => {
    view.opened.clear();
    return render();
  };
  view.expand = (key, focus) => {
    view.opened.add(key);
    view.focus = focus;
    return render();
  };
  view.collapse = (key, focus) => {
    view.opened.delete(key);
    view.focus = focus;
    return render();
  };
  view.fit = () => {
    view.moved = false;
    view.all = true;
    view.cy.fit(undefined, 20);
  };
  const render = () => {
    container.dataset.ready = 'false';
    if (view.cy) view.cy.destroy();
    return layout(container, g, selfUID, open, view).then(() => view);
  };
  // A wheel or a drag is the reader's own view, which a resize keeps.
  container.addEventListener('wheel', () => { view.moved = true; }, { passive: true });
  container.addEventListener('pointermove', (ev) => { if (ev.buttons) view.moved = true; });
  const resized = new ResizeObserver(() => {
    if (!container.isConnected) {
      resized.disconnect();
      return;
    }
    const w = container.clientWidth;
    const hgt = container.clientHeight;
    if (!view.cy || w === 0 || hgt === 0 || (w === view.width && hgt === view.height)) return;
    view.width = w;
    view.height = hgt;
    view.cy.resize();
    if (!view.moved) view.home();
  });
  resized.observe(container);
  return render();
}

function layout(container, g, selfUID, open, view) {
  const { cytoscape, dagre } = window;
  const start = performance.now();
  const grouped = groupGraph(g, view.opened);
  view.grouped = grouped;
  view.groups = grouped.groups.size;
  const elements = [];
  const sizes = new Map(); // drawn id → {w, h} for dagre
  for (const n of g.nodes) {
    if (grouped.drawnAs.get(n.uid) !== n.uid) continue;
    const st = nodeState(n);
    // A node may bring its own label and words (the object page's folded
    // references), and be inert: a click opens nothing.
    const label = n.label || n.kind + '\n' + short(n.name || n.uid, 32);
    const size = measure(label);
    const w = Math.ceil(size.w) + 16;
    const h = size.h + 12;
    const box = grouped.boxOf.get(n.uid);
    elements.push({
      group: 'nodes',
      data: { id: n.uid, label, w, h, full: n.full || `${describe(n)} (${st})`, parent: box, inert: n.inert },
      classes: st + (n.uid === selfUID ? ' self' : ''),
    });
    if (!box) sizes.set(n.uid, { w, h });
  }
  for (const gr of grouped.groups.values()) {
    const counts = { dangling: 0, waiting: 0, deleting: 0, solid: 0 };
    for (const m of gr.members) counts[nodeState(m)]++;
    const worst = stateOrder.find((s) => counts[s] > 0);
    const { solid, ...alarms } = counts;
    gr.stateWords = counted(alarms);
    gr.label = `${gr.kind} × ${gr.members.length}` + (gr.stateWords ? '\n' + gr.stateWords : '');
    const size = measure(gr.label);
    const w = Math.ceil(size.w * boldWidth) + 24;
    const h = size.h + 14;
    elements.push({
      group: 'nodes',
      data: { id: gr.id, label: gr.label, w, h, key: gr.key, count: gr.members.length, members: gr.members.map((m) => m.uid),
        full: `${gr.members.length} ${gr.kind} objects${gr.stateWords ? ' (' + gr.stateWords + ')' : ''}: click to show them` },
      classes: 'group ' + worst,
    });
    sizes.set(gr.id, { w, h });
  }
  // An open group is one box in dagre's layout, its members in a grid in
  // it: a grid of 500 reads, a row does not.
  const grids = new Map();
  const byID = new Map(elements.map((el) => [el.data.id, el]));
  for (const b of grouped.boxes.values()) {
    let cw = 0;
    let ch = 0;
    for (const m of b.members) {
      const el = byID.get(m.uid);
      cw = Math.max(cw, el.data.w);
      ch = Math.max(ch, el.data.h);
    }
    cw += 8;
    ch += 8;
    const cols = Math.max(1, Math.ceil(Math.sqrt(b.members.length * 2)));
    const rows = Math.ceil(b.members.length / cols);
    grids.set(b.id, { cw, ch, cols, rows });
    elements.push({
      group: 'nodes',
      data: { id: b.id, label: `${b.kind} × ${b.members.length}: click here to fold`, key: b.key, count: b.members.length,
        full: `${b.members.length} ${b.kind} objects: click the box to fold them into one node` },
      classes: 'box',
    });
    sizes.set(b.id, { w: cols * cw, h: rows * ch + 16 });
  }
  const layoutID = (id) => grouped.boxOf.get(id) || id;
  const big = elements.length > bigGraph;
  grouped.edges.forEach((e, i) => {
    const label = grouped.edges.length <= 60 ? edgeLabel(e) + (e.count > 1 ? (edgeLabel(e) ? ' ' : '') + '×' + e.count : '') : '';
    elements.push({
      group: 'edges',
      data: { id: 'e' + i, source: e.owner, target: e.dependent, label },
      classes: (e.controller ? 'controller' : 'ref') + (e.blockOwnerDeletion ? ' block' : ''),
    });
  });
  // dagre lays out, cytoscape draws at its positions: handing them over as
  // the elements are made costs far less than a layout pass of cytoscape's
  // over the drawn graph (2–3× at 500 nodes). longest-path ranks a large
  // graph in a fraction of network-simplex's time; on a small one
  // network-simplex's tighter ranks are worth it.
  const dg = new dagre.graphlib.Graph();
  dg.setGraph({ rankdir: 'TB', nodesep: 14, ranksep: 70, ranker: big ? 'longest-path' : 'network-simplex' });
  dg.setDefaultEdgeLabel(() => ({}));
  for (const [id, s] of sizes) dg.setNode(id, { width: s.w, height: s.h });
  for (const e of grouped.edges) {
    const s = layoutID(e.owner);
    const t = layoutID(e.dependent);
    if (s !== t) dg.setEdge(s, t);
  }
  // References by name after the owner edges, which keep their places in
  // dagre's graph where both join the same two nodes.
  const refEdges = referenceEdges(g, grouped);
  view.references = refEdges.length;
  refEdges.forEach((e, i) => {
    elements.push({
      group: 'edges',
      data: { id: 'r' + i, source: e.from, target: e.to, label: grouped.edges.length + refEdges.length <= 60 ? referenceLabel(e) : '',
        vias: [...e.vias].join(', ') },
      classes: 'reference',
    });
    const s = layoutID(e.from);
    const t = layoutID(e.to);
    if (s !== t && !dg.hasEdge(s, t) && !dg.hasEdge(t, s)) dg.setEdge(s, t);
  });
  dagre.layout(dg);
  const boxMembers = new Map();
  for (const el of elements) {
    if (el.group !== 'nodes' || el.classes === 'box') continue;
    const box = el.data.parent;
    if (box) {
      push(boxMembers, box, el);
      continue;
    }
    const n = dg.node(el.data.id);
    el.position = { x: n.x, y: n.y };
  }
  for (const [box, members] of boxMembers) {
    const n = dg.node(box);
    const gr = grids.get(box);
    const x0 = n.x - (gr.cols * gr.cw) / 2 + gr.cw / 2;
    const y0 = n.y - (gr.rows * gr.ch) / 2 + gr.ch / 2 + 8;
    members.forEach((el, i) => {
      el.position = { x: x0 + (i % gr.cols) * gr.cw, y: y0 + Math.floor(i / gr.cols) * gr.ch };
    });
  }
  const layoutMs = performance.now() - start;
  return new Promise((resolve) => {
    const cy = cytoscape({
      container, elements, style: style(big),
      // Fitting a large graph measures every label: it starts on the
      // object instead (below).
      layout: { name: 'preset', fit: !big, padding: 20 },
      minZoom: 0.02, maxZoom: 2,
      textureOnViewport: big, hideEdgesOnViewport: big, pixelRatio: big ? 1 : 'auto',
      // Members of an open group stay in their grid.
      autoungrabify: true,
    });
    view.cy = cy;
    // One listener on the whole graph: a tap on a member of a box bubbles
    // to the box, and would fold it too.
    cy.on('tap', (ev) => {
      const n = ev.target;
      if (n === cy || !n.isNode()) return;
      // Drawn again after the tap's own handling, not inside it.
      if (n.hasClass('group')) setTimeout(() => view.expand(n.data('key'), 'box:' + n.data('key')));
      else if (n.hasClass('box')) setTimeout(() => view.collapse(n.data('key'), 'group:' + n.data('key')));
      else if (!n.data('inert')) open(n.id());
    });
    cy.on('mouseover', 'node', (ev) => {
      container.title = ev.target.data('full');
      container.classList.toggle('pointer', !ev.target.data('inert'));
    });
    cy.on('mouseout', 'node', () => {
      container.title = '';
      container.classList.remove('pointer');
    });
    // home shows the graph as it first comes: a large graph fitted whole
    // is too small to read anyway, so it starts on the object itself, its
    // neighbours around it.
    view.home = () => {
      const self = cy.getElementById(grouped.drawnAs.get(selfUID) || selfUID);
      if (big && self.nonempty() && !view.all) {
        cy.zoom(1);
        cy.center(self.closedNeighborhood());
      } else {
        cy.fit(undefined, 20);
      }
    };
    cy.ready(() => {
      applyMarks(view);
      view.width = container.clientWidth;
      view.height = container.clientHeight;
      const focus = view.focus ? cy.getElementById(view.focus) : cy.collection();
      view.focus = '';
      if (focus.nonempty()) {
        // A group just opened or folded: show it, its owner above.
        cy.fit(focus.closedNeighborhood(), 30);
      } else if (big) {
        view.home();
      }
      const ms = performance.now() - start;
      const buildMs = ms - layoutMs;
      // The browser tests read the drawn graph from here.
      window.kubegcdGraph = { cy, view, ms, buildMs, layoutMs, startedAt: start, nodes: cy.nodes().length, edges: cy.edges().length };
      container.dataset.ready = 'true';
      resolve(cy);
    });
  });
}

// applyMarks puts view.marks on the drawn nodes: a group carries each
// mark any member carries, and counts them in its label.
function applyMarks(view) {
  const { cy, marks, grouped } = view;
  const all = Object.keys(markColours).join(' ');
  cy.batch(() => {
    cy.nodes().forEach((n) => {
      n.removeClass(all);
      if (n.hasClass('box')) return;
      if (!n.hasClass('group')) {
        const m = marks.get(n.id());
        if (m) n.addClass([...m].join(' '));
        return;
      }
      const gr = grouped.groups.get(n.id());
      const counts = {};
      for (const member of gr.members) {
        for (const k of marks.get(member.uid) || []) counts[k] = (counts[k] || 0) + 1;
      }
      n.addClass(Object.keys(counts).join(' '));
      const words = counted(counts, markWords);
      // The node grows to its label, in place: no new layout.
      const label = gr.label + (words ? '\n' + words : '');
      const size = measure(label);
      n.data({ label, w: Math.max(n.data('w'), Math.ceil(size.w * boldWidth) + 24), h: size.h + 14 });
    });
  });
}
