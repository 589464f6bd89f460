// What a delete would take with it, as /objects/{uid}/cascade answers: the
// object page's preview and a match of a rule that deletes show it alike.
import { h, table, objLink, badge, ruleLink, linkRules } from './util.js';

// cascadeView renders c, the answer of /objects/{uid}/cascade with
// ?propagation=p: the count, the count by kind and action, what a
// foreground delete would wait for, then the objects. Its tables carry the
// classes cascade-blocked and cascade-items, and as ids too when withIds
// (the one preview of the object page).
export function cascadeView(c, p, withIds) {
  const named = (el, name) => {
    const t = el.querySelector('table');
    t.classList.add(name);
    if (!withIds) t.removeAttribute('id');
    return el;
  };
  const counted = (el) => {
    el.classList.add('cascade-counts');
    return el;
  };
  if (c.total === 0) {
    return [h('p', { class: 'cascade-none' }, h('strong', { text: 'Nothing else' }),
      ` with propagation ${p}: no dependent in the mirror would be deleted or changed.`)];
  }
  const counts = Object.entries(c.byKind || {}).map(([kind, acts]) => ({ kind, ...acts }));
  return [
    h('p', {}, h('strong', { text: `${c.total} object${c.total === 1 ? '' : 's'}` }), ` walked with propagation ${p}`,
      c.truncated ? h('span', { class: 'warn', text: ' (truncated)' }) : null),
    counted(table([
      { title: 'kind', cell: (r) => r.kind },
      { title: 'delete', class: 'num', cell: (r) => String(r.delete || 0) },
      { title: 'remove reference', class: 'num', cell: (r) => String(r['remove-owner-reference'] || 0) },
      { title: 'keep', class: 'num', cell: (r) => String(r.keep || 0) },
    ], counts)),
    c.blockedBy && c.blockedBy.length ? [h('h3', { text: 'Would wait for' }), named(table([
      { title: 'object', cell: (b) => objLink(b.target) },
      { title: 'finalizers', cell: (b) => (b.finalizers || []).join(', ') },
      { title: 'reason', cell: (b) => linkRules(b.reason), class: 'reason' },
    ], c.blockedBy, { id: 'cascade-blocked' }), 'cascade-blocked')] : null,
    h('h3', { text: 'Objects' }),
    named(table([
      { title: 'depth', class: 'num', cell: (i) => String(i.depth) },
      { title: 'object', cell: (i) => objLink(i.target) },
      { title: 'action', cell: (i) => badge(i.action, i.action === 'delete' ? 'bad' : i.action === 'keep' ? 'ok' : 'warn') },
      { title: 'rule', cell: (i) => i.rule ? ruleLink(i.rule) : '', class: 'nowrap' },
      { title: 'reason', cell: (i) => linkRules(i.reason), class: 'reason' },
    ], c.items.slice(0, 200), { id: 'cascade-items' }), 'cascade-items'),
    c.items.length > 200 ? h('p', { class: 'muted', text: `the first 200 of ${c.items.length} are listed` }) : null,
  ].flat().filter(Boolean);
}
