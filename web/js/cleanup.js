// The cleanup rules of /rules: each rule loaded with its mode, when it
// passes, its cap and its last pass; the files and rules refused; a chosen
// rule's text and its matches, paged by the API's cursor, each of a rule
// that deletes with a preview of what its delete takes. (rules.js is
// another thing: the titles of the controllers' rule ids.)
import { h, api, qs, table, when, filterForm, badge, setTitle, errorBox, age, goSeconds, go, paramsObject, linkRules, secondsSince, ruleHref } from './util.js';
import { cursorPager } from './lists.js';
import { cascadeView } from './cascade.js';

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

// modeBadge says what a rule does with its matches. A rule that deletes
// stands out, and while kubegcd runs in dry-run, which wins over every
// rule, it would delete.
function modeBadge(r, dryRun) {
  if (r.action !== 'delete') return h('span', { class: 'badge mode', text: 'reports', title: 'it reports its matches and deletes nothing' });
  if (dryRun) {
    return h('span', { class: 'badge mode would-delete', text: 'would delete',
      title: 'a rule that deletes, but kubegcd runs in dry-run, which wins: it records what it would delete and deletes nothing' });
  }
  return h('span', { class: 'badge mode deletes', text: 'deletes', title: 'it deletes its matches, through the applier' });
}

// passesText says when a rule passes: every interval, or at its cron
// schedule's times.
function passesText(r) {
  if (r.schedule) {
    return h('code', { class: 'schedule', title: 'a cron schedule: a pass starts at its times, in UTC unless CRON_TZ= names a zone', text: r.schedule });
  }
  return 'every ' + (age(goSeconds(r.interval)) || r.interval);
}

// nextPass says when a rule's next pass is due, the time itself on hover;
// next prefixes a time to come.
function nextPass(r, next = '') {
  if (!r.nextPassAt) return h('span', { class: 'muted', text: 'once synced', title: 'no pass is due before the mirror first syncs' });
  const s = -secondsSince(r.nextPassAt);
  return h('time', { datetime: r.nextPassAt, title: r.nextPassAt, text: s >= 1 ? next + 'in ' + age(s) : 'due now' });
}

// whenCell says when a rule passes, and its next pass below.
function whenCell(r) {
  return [h('span', { class: 'passes' }, passesText(r)), h('div', { class: 'next' }, nextPass(r, 'next '))];
}

// capWords writes a rule's limits: "10", "5%", "10 or 5%"; "" for none.
function capWords(l) {
  const parts = [];
  if (l && l.max_count) parts.push(String(l.max_count));
  if (l && l.max_percent) parts.push(l.max_percent + '%');
  return parts.join(' or ');
}

// capTitle says what a rule's limits do, in a sentence.
function capTitle(l) {
  const parts = [];
  if (l.max_count) parts.push(`more than ${l.max_count} object${l.max_count === 1 ? '' : 's'}`);
  if (l.max_percent) parts.push(`more than ${l.max_percent}% of the objects of their kinds`);
  return `a pass due to delete ${parts.join(', or ')} deletes nothing`;
}

// capCell shows the cap of a rule that deletes; no cap is a caution. A
// rule that reports deletes nothing: its cap does not matter.
function capCell(r) {
  if (r.action !== 'delete') return '';
  const words = capWords(r.limits);
  if (!words) {
    return h('span', { class: 'badge warn no-cap', text: 'no cap',
      title: 'nothing limits how many objects one pass deletes, but the blast-radius cap of every controller' });
  }
  return h('span', { class: 'cap', title: capTitle(r.limits), text: 'at most ' + words });
}

// actedParts writes what the last pass of a rule that deletes did, as
// acted says, one part a count, the reasons it left matches alone
// included. A capped pass is one part: why.
function actedParts(a) {
  if (a.capped) return [h('span', { class: 'capped' }, badge('capped', 'bad'), ' ', h('span', { class: 'capped-reason', text: a.capped }))];
  const parts = [];
  if (a.deleted) parts.push(h('span', { class: 'bad', text: `deleted ${a.deleted}` }));
  if (a.dryRun) parts.push(h('span', { class: 'would', text: `would delete ${a.dryRun}` }));
  if (a.notified) parts.push(h('span', { text: `notified ${a.notified}`, title: 'notice Events sent: each object is deleted once its notice has run' }));
  if (a.waiting) parts.push(h('span', { text: `waiting ${a.waiting}`, title: 'matches waiting out their notice' }));
  const skipped = Object.entries(a.skipped || {}).filter(([, n]) => n > 0);
  if (skipped.length) {
    const n = skipped.reduce((t, [, k]) => t + k, 0);
    parts.push(h('span', { title: 'left alone this pass: changed (another resourceVersion live), referenced (a reference appeared), ' +
      'excluded, spared (restored from a copy this rule deleted) or gone' },
    `left alone ${n} (`, skipped.map(([why, k], i) => [i ? ', ' : '', `${why} ${k}`]), ')'));
  }
  if (a.failed) parts.push(h('span', { class: 'bad', text: `failed ${a.failed}`, title: 'deletions that failed or were held back: pending for the next pass' }));
  if (parts.length === 0) {
    parts.push(h('span', { class: 'muted', text: a.due ? `${a.due} due, none acted on` : 'nothing due' }));
  }
  return parts;
}

// outcome says what a rule's last pass came to: why it failed, what a
// rule that deletes did, or that a rule that reports reported. st is
// /status (null when unread): a follower leaves the acting to the leader.
function outcome(r, st) {
  const lp = r.lastPass;
  if (!lp) return '';
  if (lp.error) return h('span', { class: 'bad', text: lp.error });
  if (r.action !== 'delete') return h('span', { class: 'muted', text: 'reported' });
  if (!lp.acted) {
    return h('span', { class: 'muted', text: st && !st.leader ? 'left to the leader: this instance does not lead' : 'not acted on' });
  }
  return actedParts(lp.acted).map((part, i) => [i ? h('span', { class: 'sep', text: ' · ' }) : null, part]);
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
  // /status says whether kubegcd runs in dry-run; without it the page
  // still lists the rules, and says what it cannot tell.
  let statusErr = null;
  const [list, st] = await Promise.all([api('/rules'), api('/status').catch((err) => {
    statusErr = err;
    return null;
  })]);
  if (!ctx.isCurrent()) return;
  const dryRun = !!(st && st.enforcement && st.enforcement.dryRun);
  const deleting = list.items.filter((r) => r.action === 'delete').length;
  view.append(h('h1', { text: 'Cleanup rules' }),
    h('p', { class: 'muted', id: 'rules-intro' }, 'Rules written as SQL over the mirror. ',
      'Each runs every interval, or at its schedule\'s times, and reports what it matches now. ',
      'A rule deletes its matches only when it says ', h('code', { text: 'action: delete' }),
      ', and the global dry-run wins over every rule. A finding is shown with the matches and never acted on.'),
    statusErr ? errorBox(new Error(`${statusErr.message}: whether kubegcd runs in dry-run is unknown, and the rules that delete are shown as if it enforced.`))
      : modeNote(dryRun, deleting, st));
  const errors = list.errors || [];
  const files = list.files || [];
  view.append(h('p', { class: 'muted', id: 'rules-source' }, 'Rule files are read from ', h('code', { text: list.dir }),
    `: ${files.length === 0 ? 'none there' : files.length + ' file' + (files.length === 1 ? '' : 's')}`,
    list.loadedAt ? [', last read ', when(list.loadedAt)] : null, '.'));
  if (errors.length) view.append(refusedBox(errors, list.dir));
  const rows = table([
    { title: 'rule', cell: (r) => h('a', { href: ruleHref(r.id), title: r.description || r.id }, h('code', { text: r.id })), class: 'nowrap' },
    { title: 'source', cell: (r) => where(r, list.dir) },
    { title: 'mode', cell: (r) => modeBadge(r, dryRun), class: 'nowrap' },
    { title: 'when', cell: whenCell, class: 'nowrap' },
    { title: 'cap', cell: capCell, class: 'nowrap' },
    { title: 'matches', class: 'num', cell: (r) => String(r.matches) },
    { title: 'findings', class: 'num', cell: (r) => r.findings ? badge(String(r.findings), 'warn') : '0' },
    { title: 'last pass', cell: lastPass, class: 'nowrap' },
    { title: 'outcome', cell: (r) => outcome(r, st), class: 'outcome' },
  ], list.items, { id: 'rules', empty: 'no rule is loaded' });
  rows.classList.add('rules');
  for (const [i, tr] of [...rows.querySelectorAll('tbody tr')].entries()) {
    const r = list.items[i];
    if (!r) continue;
    tr.dataset.rule = r.id;
    tr.dataset.mode = r.action;
    if (r.lastPass && r.lastPass.acted && r.lastPass.acted.capped) tr.classList.add('capped');
    if (r.id === chosen) {
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
  await ruleSection(view, ctx, rule, list.dir, st, dryRun);
}

// modeNote says, under the intro, what the rules that delete do now: in
// dry-run nothing, paused they wait, enforcing they delete. Without such a
// rule it says nothing.
function modeNote(dryRun, deleting, st) {
  if (!deleting) return null;
  const pending = h('a', { href: '#/pending' + qs({ controller: 'rules' }), text: 'Pending' });
  const audit = h('a', { href: '#/audit' + qs({ controller: 'rules' }), text: 'the audit' });
  let text;
  if (dryRun) {
    text = ['kubegcd runs in dry-run: a rule marked ', h('strong', { text: 'would delete' }),
      ' records what it would delete, in ', pending, ' and ', audit, ', and deletes nothing.'];
  } else if (st && st.enforcement && st.enforcement.paused) {
    text = [`Enforcement is paused (${(st.enforcement.pausedBy || []).join(', ')}): the rules that delete wait until it resumes.`];
  } else {
    text = ['kubegcd enforces: what a rule marked ', h('strong', { text: 'deletes' }), ' matches is deleted, within its cap, and recorded in ', audit, '.'];
  }
  return h('p', { class: 'mode-note ' + (dryRun ? 'dry-run' : 'enforcing'), id: 'rules-mode' }, text);
}

// ruleSection shows one rule: its words, when it passes, what it does with
// its matches and what its last pass did, its parameters and exclusions,
// its matches with the namespace and kind filters, then its SELECT, which
// the built-ins' make long.
async function ruleSection(view, ctx, r, dir, st, dryRun) {
  const p = ctx.params;
  const filter = paramsObject(p, ['namespace', 'kind']);
  const lp = r.lastPass;
  const deletes = r.action === 'delete';
  const acted = lp && lp.acted;
  const section = h('section', { id: 'rule', class: 'rule-detail', dataset: { rule: r.id, mode: r.action } },
    h('h2', {}, 'Rule ', h('code', { text: r.id }), ' ', modeBadge(r, dryRun)),
    r.description ? h('p', { id: 'rule-description', text: r.description }) : null,
    acted && acted.capped ? h('div', { class: 'error capped', id: 'rule-capped', role: 'status' },
      h('strong', { text: 'Capped: ' }), h('span', { text: acted.capped + '.' }),
      ' Each pass stays capped while more are due than its limits allow.') : null,
    h('dl', { class: 'facts', id: 'rule-facts' },
      h('dt', { text: 'source' }), h('dd', {}, where(r, dir)),
      h('dt', { text: 'mode' }), h('dd', { id: 'rule-mode' }, modeBadge(r, dryRun), ' ', h('span', { class: 'muted', text: modeWords(r, dryRun) })),
      h('dt', { text: 'passes' }), h('dd', {}, passesText(r)),
      h('dt', { text: 'next pass' }), h('dd', { id: 'rule-next' }, nextPass(r)),
      deletes ? [
        h('dt', { text: 'acts after' }), h('dd', { id: 'rule-occurrences', text: `${r.occurrences} pass${r.occurrences === 1 ? '' : 'es'} in a row that match an object` }),
        h('dt', { text: 'cap' }), h('dd', { id: 'rule-cap' }, capCell(r), r.limits && capWords(r.limits) ? h('span', { class: 'muted', text: ': ' + capTitle(r.limits) }) : null),
        h('dt', { text: 'notice before' }), h('dd', { id: 'rule-notice' }, r.notifyBefore ? [age(goSeconds(r.notifyBefore)) || r.notifyBefore,
          h('span', { class: 'muted', text: ': a Kubernetes Event on the object says so, that long before its delete' })] : h('span', { class: 'muted', text: 'none' })),
        h('dt', { text: 'propagation' }), h('dd', { text: r.propagation }),
      ] : null,
      h('dt', { text: 'hash' }), h('dd', {}, h('code', { text: r.hash })),
      h('dt', { text: 'last pass' }), h('dd', {}, lastPass(r),
        lp ? h('span', { class: 'muted', text: `: ${lp.matches} match${lp.matches === 1 ? '' : 'es'}, ${lp.findings} finding${lp.findings === 1 ? '' : 's'}` +
          (acted ? `, ${acted.due} due` : '') }) : null),
      deletes && lp && !lp.error ? [h('dt', { text: 'outcome' }), h('dd', { id: 'rule-outcome' }, outcome(r, st))] : null,
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
    deletes ? h('p', { class: 'muted', id: 'matches-preview-hint', text: `Preview shows what deleting a match with propagation ${r.propagation}, as the rule would, ` +
      'takes with it, decided by the ownership collector\'s rules from the mirror. Nothing is deleted.' }) : null,
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
  const columns = [
    { title: 'kind', cell: (i) => i.kind },
    { title: 'object', cell: (i) => h('a', { href: '#/objects/' + encodeURIComponent(i.uid), title: 'uid ' + i.uid,
      text: (i.namespace ? i.namespace + '/' : '') + i.name }) },
    { title: 'reason', class: 'reason', cell: (i) => [i.finding ? [badge('finding', 'warn'), ' '] : null, linkRules(i.reason)] },
    { title: 'since', cell: (i) => when(i.since), class: 'nowrap' },
  ];
  // A rule that deletes: each match previews what its delete takes.
  if (deletes) columns.push({ title: 'if deleted', class: 'nowrap', cell: () => '' });
  const rows = table(columns, m.items, { id: 'matches', empty: Object.keys(filter).length ? 'no match in this filter' : 'it matches nothing' });
  for (const [i, tr] of [...rows.querySelectorAll('tbody tr')].entries()) {
    const item = m.items[i];
    if (!item) continue;
    tr.dataset.uid = item.uid;
    if (item.finding) {
      tr.classList.add('finding');
      if (deletes) tr.lastElementChild.append(h('span', { class: 'muted', text: 'a finding: never deleted' }));
    } else if (deletes) {
      tr.lastElementChild.append(previewButton(tr, item, r.propagation, columns.length));
    }
  }
  matches.replaceChildren(h('p', { class: 'muted', id: 'count', text: `${pg.label}: ${m.items.length} row${m.items.length === 1 ? '' : 's'}` }),
    rows, pg.buttons);
}

// modeWords says in a sentence what a rule does with its matches.
function modeWords(r, dryRun) {
  if (r.action !== 'delete') return 'it reports what it matches and deletes nothing';
  const what = `a match once it has held for ${r.occurrences} pass${r.occurrences === 1 ? '' : 'es'} in a row, after a live re-check`;
  if (dryRun) return `it deletes ${what}; kubegcd runs in dry-run, which wins: it records what it would delete and deletes nothing`;
  return `it deletes ${what}, through the applier`;
}

// previewButton opens, in a row under a match's row tr, what deleting the
// match with the rule's propagation would take with it; again, it closes
// it. span is the matches table's column count.
function previewButton(tr, item, propagation, span) {
  const p = (propagation || 'Background').toLowerCase();
  let row = null;
  const btn = h('button', { type: 'button', class: 'preview', text: 'Preview', 'aria-expanded': 'false',
    title: `what deleting it with propagation ${propagation} would take with it` });
  btn.addEventListener('click', async () => {
    if (row) {
      row.remove();
      row = null;
      btn.textContent = 'Preview';
      btn.setAttribute('aria-expanded', 'false');
      return;
    }
    const out = h('div', { class: 'cascade-preview' }, h('p', { class: 'muted', text: 'walking the dependents…' }));
    row = h('tr', { class: 'cascade-row', dataset: { uid: item.uid } }, h('td', { colSpan: span }, out));
    tr.after(row);
    btn.textContent = 'Hide';
    btn.setAttribute('aria-expanded', 'true');
    try {
      const c = await api(`/objects/${encodeURIComponent(item.uid)}/cascade` + qs({ propagation: p }));
      out.replaceChildren(h('p', { class: 'cascade-what' }, 'Deleting ', h('a', { href: '#/objects/' + encodeURIComponent(item.uid),
        text: `${item.kind} ${item.namespace ? item.namespace + '/' : ''}${item.name}` }), ', as the rule would:'), ...cascadeView(c, p, false));
      out.dataset.loaded = 'true';
    } catch (err) {
      out.replaceChildren(errorBox(err));
      out.dataset.loaded = 'true';
    }
  });
  return btn;
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
