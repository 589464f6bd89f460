// Undo: on a deleted object's page, the copy kubegcd kept when it deleted
// it, the copy itself, and a Restore button; on an object restored from a
// copy, where it came from and which rules leave it alone.
import { h, api, ApiError, qs, when, targetText, ruleHref, errorBox } from './util.js';

// deleter says who deleted an object: a cleanup rule, linked to the Rules
// page, or a collector.
function deleter(controller, rule) {
  if (controller === 'rules' && rule) return ['rule ', h('a', { class: 'deleter', href: ruleHref(rule) }, h('code', { text: rule }))];
  return ['the ', h('code', { text: controller }), ' collector'];
}

// who shows who asked for a restore: the caller and its address; the
// User-Agent the API adds in parentheses is on hover.
function who(by) {
  if (!by) return h('span', { class: 'muted', text: 'someone' });
  const i = by.indexOf(' (');
  return h('span', { class: 'who', title: by, text: i < 0 ? by : by.slice(0, i) });
}

// uidLink links an object's page by its UID.
function uidLink(uid, text) {
  return h('a', { href: '#/objects/' + encodeURIComponent(uid), title: 'uid ' + uid }, text || h('code', { text: uid }));
}

// restoredAsLine says what a restore made of the copy of t.
function restoredAsLine(t, r) {
  return h('p', { id: 'restored-as' }, 'Restored as ', uidLink(r.restoredUID, targetText(t)), ' (uid ', h('code', { text: r.restoredUID }), ')',
    ' by ', who(r.restoredBy), ' ', when(r.restoredAt), '.');
}

// copySection fills box, a section of the page of the deleted object uid,
// whose history is hist: the copy kept of it, if any, with what became of
// it. It resolves once the section is drawn; box stays hidden when no copy
// is kept here and no restore was made.
export async function copySection(box, uid, hist) {
  const t = hist.target;
  const copy = t ? await copyOf(uid, t) : null;
  if (!copy && !hist.restoredAs) return;
  box.hidden = false;
  box.append(h('h2', { text: 'Undo' }));
  if (!copy) {
    box.append(restoredAsLine(t, hist.restoredAs));
    return;
  }
  const secret = copy.secretDataDropped;
  box.append(h('p', { id: 'copy-kept' }, 'A copy was kept when ', deleter(copy.controller, copy.rule), ' deleted it ', when(copy.takenAt), '.',
    secret ? h('span', { class: 'warn', id: 'copy-no-data', text: ' Its data was not kept: kubegcd ran without --keep-deleted-secrets.' }) : null));

  if (copy.restoredUID) {
    box.append(restoredAsLine(t, copy));
  } else {
    const result = h('div', { id: 'restore-result', role: 'status' });
    const bar = h('div', { class: 'toolbar' });
    const button = h('button', { type: 'button', class: 'primary', id: 'restore', text: 'Restore', onclick: async () => {
      const allowEmptySecret = await confirmRestore(copy);
      if (allowEmptySecret === null) return;
      button.disabled = true;
      result.replaceChildren(h('p', { class: 'muted', text: 'restoring…' }));
      try {
        const res = await api(`/objects/${encodeURIComponent(uid)}/restore`, { body: allowEmptySecret ? { allowEmptySecret } : {} });
        bar.remove();
        result.replaceChildren(restoredView(res));
      } catch (err) {
        button.disabled = false;
        // Restored meanwhile, from another page or the CLI: say as what,
        // and offer it no more.
        const now = err instanceof ApiError && err.status === 409 ? await copyOf(uid, t).catch(() => null) : null;
        if (now && now.restoredUID) {
          bar.remove();
          result.replaceChildren(h('div', { class: 'error', role: 'alert', id: 'restore-refused', text: 'Refused: this copy was restored already.' }),
            restoredAsLine(t, now));
          return;
        }
        result.replaceChildren(refusedView(err, uid));
      }
    } });
    bar.append(button, h('span', { class: 'muted', text: 'Creates it again from the copy. It needs the API\'s credentials, and the audit records who asked.' }));
    box.append(bar, result);
  }

  const json = h('div', { class: 'copy-object' });
  const view = h('details', { id: 'copy-view', ontoggle: () => {
    if (!view.open || json.dataset.read) return;
    json.dataset.read = 'true';
    json.replaceChildren(h('p', { class: 'muted', text: 'reading the copy…' }));
    api('/deleted-copies/' + encodeURIComponent(uid)).then((d) => {
      // managedFields is the API server's bookkeeping, which a restore
      // leaves out too.
      const obj = d.object;
      if (obj && obj.metadata) delete obj.metadata.managedFields;
      json.replaceChildren(h('p', { class: 'muted' }, 'The object as it was read just before its deletion, without its managedFields',
        secret ? ', and without the data and stringData that were not kept' : '', '.'),
      h('pre', { class: 'copy-json', text: JSON.stringify(obj, null, 2) }));
    }, (err) => json.replaceChildren(errorBox(err)));
  } }, h('summary', { text: 'View copy' }), json);
  box.append(view);
}

// copyOf reads the copy kept of the deleted object uid, named t; null when
// none is. A list by name rather than GET /deleted-copies/{uid}: an object
// without a copy is the common case, and not an error.
async function copyOf(uid, t) {
  const list = await api('/deleted-copies' + qs({ namespace: t.namespace, name: t.name, limit: 1000 }));
  return list.items.find((c) => c.target.uid === uid) || null;
}

// confirmRestore asks before a restore, naming the object. It resolves to
// null when cancelled, else to whether a Secret without data may be made.
function confirmRestore(copy) {
  return new Promise((resolve) => {
    const secret = copy.secretDataDropped;
    const confirm = h('button', { type: 'submit', class: 'primary', id: 'restore-confirm', value: 'restore', text: 'Restore', disabled: secret });
    const empty = secret ? h('input', { type: 'checkbox', id: 'restore-empty-secret', onchange: () => { confirm.disabled = !empty.checked; } }) : null;
    const dialog = h('dialog', { class: 'confirm-dialog', id: 'restore-dialog' },
      h('form', { method: 'dialog' },
        h('h2', {}, 'Restore ', h('span', { id: 'restore-what', text: targetText(copy.target) }), '?'),
        h('p', {}, 'kubegcd creates it again from the copy taken ', when(copy.takenAt), ', without its uid, resourceVersion and status.',
          ' An owner reference is kept only when its owner still exists.'),
        secret ? h('p', {}, empty, ' ', h('label', { for: 'restore-empty-secret', text: 'Create the Secret without data: its data was not kept.' })) : null,
        h('div', { class: 'dialog-actions' },
          h('button', { type: 'submit', id: 'restore-cancel', value: 'cancel', text: 'Cancel' }), confirm)));
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(dialog.returnValue === 'restore' ? !!(empty && empty.checked) : null);
    });
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector('#restore-cancel').focus();
  });
}

// restoredView says what a restore made: the new object, linked, and what
// it left out.
function restoredView(res) {
  const dropped = res.droppedOwnerReferences || [];
  return h('div', { class: 'note restored' },
    h('p', { id: 'restored-link' }, 'Restored as ', uidLink(res.target.uid, targetText(res.target)), ' (uid ', h('code', { text: res.target.uid }), ').'),
    dropped.length ? h('p', {}, `Left out ${dropped.length} owner reference${dropped.length === 1 ? '' : 's'} whose owner is gone: `,
      dropped.map((r, i) => [i ? ', ' : '', h('code', { text: `${r.kind}/${r.name}` })]), '.') : null,
    res.secretDataEmpty ? h('p', { class: 'warn', text: 'The Secret was created without data.' }) : null,
    res.warning ? h('div', { class: 'error', text: 'It was made, but not recorded: ' + res.warning }) : null);
}

// refusedView says why a restore was not made. A refusal's UIDs (the
// object that holds the name, the restore made before) are linked.
function refusedView(err, uid) {
  if (!(err instanceof ApiError)) return errorBox(err);
  if (err.status === 401 || err.status === 403) {
    return h('div', { class: 'error', role: 'alert', id: 'restore-denied' },
      h('p', { text: err.message }),
      h('p', { text: 'A restore writes to the cluster, so it needs the API\'s credentials: a token of --auth-token-file (the page asks for it), or a client certificate of --client-ca-file. Without either, only a kubegcd that listens on loopback restores.' }));
  }
  if (err.status !== 409) return errorBox(err);
  const text = err.message.replace(/^restore refused: /, '');
  const parts = text.split(/\b(uid [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/);
  return h('div', { class: 'error', role: 'alert', id: 'restore-refused' }, 'Refused: ',
    parts.map((p, i) => {
      if (i % 2 === 0) return p;
      const id = p.slice(4);
      return id === uid ? p : ['uid ', uidLink(id)];
    }));
}

// restoredFromNote says, on a live object's page, which deleted object it
// was restored from and which cleanup rules spare it; null when neither.
export function restoredFromNote(det) {
  const from = det.restoredFrom;
  const spared = det.sparedBy || [];
  if (!from && !spared.length) return null;
  return h('div', { class: 'note restored', id: 'restored-from' },
    from ? h('p', {}, 'Restored from ', uidLink(from.deletedUID), ' (deleted by ', deleter(from.deletedBy, from.rule), ' ', when(from.takenAt), ').',
      from.restoredAt ? [' ', who(from.restoredBy), ' asked for it ', when(from.restoredAt), '.'] : null) : null,
    spared.map((s) => h('p', { class: 'spared', dataset: { rule: s.rule } }, 'Rule ', h('a', { href: ruleHref(s.rule) }, h('code', { text: s.rule })),
      ' leaves it alone while its text is unchanged', h('span', { class: 'muted', title: 'the hash of the rule\'s text when it deleted the original', text: s.ruleHash ? ` (hash ${s.ruleHash.slice(0, 12)})` : '' }), '.')));
}
