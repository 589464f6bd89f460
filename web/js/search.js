// The search box: "namespace/kind/name", "kind/name", "namespace/kind", a
// kind, or a name; suggestions come from /objects (lookup by kind and name,
// each with a limit), never from a list of everything.
import { h, api, qs } from './util.js';

const listLimit = 200; // objects of one kind read to match a name fragment
const shown = 12;

let kinds = null; // [{kind, resource, group, objects}] from /status
let namespaces = null; // names, the first 10,000

async function loadNamespaces(signal) {
  if (!namespaces) {
    const r = await api('/objects' + qs({ kind: 'namespaces', limit: 10000 }), { signal });
    namespaces = r.items.map((o) => o.name);
  }
  return namespaces;
}

async function loadKinds() {
  if (kinds) return kinds;
  const st = await api('/status');
  kinds = st.resources.map((r) => ({ kind: r.kind, resource: r.resource, group: r.group, objects: r.objects, namespaced: r.namespaced }));
  return kinds;
}

function kindOf(word) {
  const w = word.toLowerCase();
  return kinds.find((k) => k.kind.toLowerCase() === w || k.resource === w ||
    (k.group && (k.kind.toLowerCase() + '.' + k.group === w || k.resource + '.' + k.group === w)));
}

function kindParam(k) {
  return k.group ? k.resource + '.' + k.group : k.resource;
}

function objSuggestion(o) {
  return { label: (o.namespace ? o.namespace + '/' : '') + o.name, kind: o.kind, href: '#/objects/' + encodeURIComponent(o.uid) };
}

// lookup finds objects of kind k: the exact name, then names containing the
// fragment among the first listLimit of the kind (in the namespace if given).
async function lookup(k, namespace, fragment, signal) {
  const base = { kind: kindParam(k), namespace };
  const out = [];
  const seen = new Set();
  const addAll = (items) => {
    for (const o of items) {
      if (!seen.has(o.uid)) {
        seen.add(o.uid);
        out.push(o);
      }
    }
  };
  if (fragment) {
    const exact = await api('/objects' + qs({ ...base, name: fragment, limit: 20 }), { signal });
    addAll(exact.items);
  }
  const list = await api('/objects' + qs({ ...base, limit: listLimit }), { signal });
  const f = (fragment || '').toLowerCase();
  addAll(list.items.filter((o) => o.name.toLowerCase().includes(f)));
  return out;
}

// suggest turns the box's text into suggestions.
async function suggest(text, signal) {
  await loadKinds();
  const parts = text.trim().split(/[/\s]+/).filter(Boolean);
  if (parts.length === 0) return [];
  if (parts.length >= 3) {
    const k = kindOf(parts[1]);
    if (!k) return [{ note: `no kind "${parts[1]}"` }];
    return (await lookup(k, parts[0], parts.slice(2).join('/'), signal)).map(objSuggestion);
  }
  if (parts.length === 2) {
    const k0 = kindOf(parts[0]);
    if (k0) return (await lookup(k0, '', parts[1], signal)).map(objSuggestion);
    const k1 = kindOf(parts[1]);
    if (k1) return (await lookup(k1, parts[0], '', signal)).map(objSuggestion);
    return [{ note: 'type namespace/kind/name or kind/name' }];
  }
  if (text.trim().endsWith('/')) {
    // "Kind/" lists the kind's first objects; "namespace/" offers the kinds
    // to narrow by.
    const k = kindOf(parts[0]);
    if (k) return (await lookup(k, '', '', signal)).map(objSuggestion);
    // A namespace's map comes first.
    const map = (await loadNamespaces(signal)).includes(parts[0])
      ? [{ label: 'every owner tree in ' + parts[0], kind: 'map', href: '#/map' + qs({ namespace: parts[0] }) }] : [];
    return map.concat(kinds.filter((k) => k.objects > 0 && k.namespaced).map((k) => ({ label: parts[0] + '/' + k.kind + '/', kind: 'kind', complete: parts[0] + '/' + k.kind + '/' })));
  }
  // One word: objects of that exact name in every kind that has objects
  // (one indexed lookup each), then kinds it starts and namespaces holding
  // it, which complete the box so that the next word narrows.
  const w = parts[0].toLowerCase();
  const completions = kinds.filter((k) => k.objects > 0 && (k.kind.toLowerCase().startsWith(w) || k.resource.startsWith(w)))
    .slice(0, 4).map((k) => ({ label: k.kind + '/', kind: 'kind', complete: k.kind + '/' }));
  completions.push(...(await loadNamespaces(signal)).filter((n) => n.includes(w)).slice(0, 6)
    .map((n) => ({ label: n + '/', kind: 'namespace', complete: n + '/' })));
  const withObjects = kinds.filter((k) => k.objects > 0);
  const found = await Promise.all(withObjects.map((k) =>
    api('/objects' + qs({ kind: kindParam(k), name: parts[0], limit: 5 }), { signal }).then((r) => r.items)));
  return found.flat().map(objSuggestion).concat(completions);
}

export function initSearch() {
  const input = document.getElementById('search');
  const list = document.getElementById('suggestions');
  // A phone's box is too narrow for the whole hint, and a phone has no /
  // key: app.css's phone layout starts at the same width.
  const full = input.placeholder;
  const narrow = matchMedia('(max-width: 700px)');
  const hint = () => { input.placeholder = narrow.matches ? 'Find: ns/kind/name or a name' : full; };
  hint();
  narrow.addEventListener('change', hint);
  let items = [];
  let active = -1;
  let timer = 0;
  let ctrl = null;
  // fresh: items answer the box's current text; an Enter typed before they
  // do opens the first match once it comes.
  let fresh = false;
  let enterPending = false;

  const close = () => {
    enterPending = false;
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    active = -1;
  };
  const choose = (s) => {
    if (!s || s.note) return;
    if (s.complete) {
      input.value = s.complete;
      input.focus();
      update();
      return;
    }
    close();
    input.blur();
    location.hash = s.href;
  };
  const draw = () => {
    list.replaceChildren(...items.slice(0, shown).map((s, i) => {
      if (s.note) return h('li', { class: 'note', text: s.note });
      return h('li', { role: 'option', id: 'sugg-' + i, 'aria-selected': String(i === active),
        onmousedown: (ev) => { ev.preventDefault(); choose(s); } },
      h('span', { class: 'kind', text: s.kind }), h('span', { text: s.label }));
    }));
    if (items.length === 0) list.append(h('li', { class: 'note', text: 'no match' }));
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    if (active >= 0) input.setAttribute('aria-activedescendant', 'sugg-' + active);
    else input.removeAttribute('aria-activedescendant');
  };
  const update = () => {
    clearTimeout(timer);
    if (ctrl) ctrl.abort();
    fresh = false;
    const text = input.value;
    if (!text.trim()) {
      close();
      return;
    }
    timer = setTimeout(async () => {
      ctrl = new AbortController();
      const mine = ctrl;
      try {
        const got = await suggest(text, mine.signal);
        if (mine.signal.aborted) return;
        items = got;
        fresh = true;
        list.dataset.for = text; // which text these answer
        active = items.length > 0 && !items[0].note ? 0 : -1;
        draw();
        if (enterPending) {
          enterPending = false;
          if (active >= 0) choose(items[active]);
        }
      } catch (err) {
        if (mine.signal.aborted) return;
        items = [{ note: err.message }];
        fresh = true;
        enterPending = false;
        active = -1;
        draw();
      }
    }, 150);
  };
  input.addEventListener('input', update);
  input.addEventListener('keydown', (ev) => {
    const n = Math.min(items.length, shown);
    if (ev.key === 'ArrowDown' && n > 0) {
      active = (active + 1) % n;
      draw();
      ev.preventDefault();
    } else if (ev.key === 'ArrowUp' && n > 0) {
      active = (active - 1 + n) % n;
      draw();
      ev.preventDefault();
    } else if (ev.key === 'Enter') {
      ev.preventDefault();
      if (!fresh) enterPending = input.value.trim() !== '';
      else if (active >= 0) choose(items[active]);
    } else if (ev.key === 'Escape') {
      close();
    }
  });
  input.addEventListener('blur', () => setTimeout(close, 100));
  // "/" anywhere but in a field focuses the search, as on GitHub.
  document.addEventListener('keydown', (ev) => {
    const t = ev.target;
    if (ev.key === '/' && !(t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement)) {
      ev.preventDefault();
      input.focus();
      input.select();
    }
  });
}
