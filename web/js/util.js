// Helpers shared by the pages: DOM building, the API, formatting, tables.
import { rules } from './rules.js';

// h builds an element: attrs sets properties (class, text, href, on*,
// dataset…); children are nodes or strings (text, never HTML).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// ApiError is an API answer other than 2xx, with the API's one-line error.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// The API may want a bearer token (--auth-token-file): the page asks for it
// once, keeps it in this tab's session storage (gone with the tab) and
// sends it with every request.
const tokenKey = 'kubegcd-token';
let asking = null; // the one open question, shared by the requests that wait for it

function authHeaders() {
  const token = sessionStorage.getItem(tokenKey);
  return token ? { Authorization: 'Bearer ' + token } : {};
}

// askToken opens a dialog for the token, saying why, and resolves once it
// is given (or the dialog dismissed).
function askToken(why) {
  if (!asking) {
    asking = new Promise((resolve) => {
      const input = h('input', { type: 'password', id: 'token-input', name: 'token', autocomplete: 'off', spellcheck: false });
      const dialog = h('dialog', { class: 'token-dialog', id: 'token-dialog' },
        h('form', { method: 'dialog' },
          h('h2', { text: 'Sign in to kubegcd' }),
          h('p', { class: 'muted', text: why }),
          h('label', { for: 'token-input', text: 'Bearer token (a token of --auth-token-file)' }),
          input,
          h('div', { class: 'token-actions' }, h('button', { type: 'submit', class: 'primary', id: 'token-submit', text: 'Sign in' }))));
      dialog.addEventListener('close', () => {
        const token = input.value.trim();
        if (token) sessionStorage.setItem(tokenKey, token);
        dialog.remove();
        asking = null;
        resolve();
      });
      document.body.append(dialog);
      dialog.showModal();
      input.focus();
    });
  }
  return asking;
}

// api GETs a JSON endpoint, or with opts.body POSTs that body as JSON (the
// API takes no other type, so no other origin can post one); a 401 asks for
// a token and tries again.
export async function api(path, opts = {}) {
  const post = opts.body !== undefined;
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: 'application/json', ...(post ? { 'Content-Type': 'application/json' } : {}), ...authHeaders() };
    const resp = await fetch(path, post ? { method: 'POST', headers, body: JSON.stringify(opts.body), signal: opts.signal }
      : { headers, signal: opts.signal });
    let body = null;
    try {
      body = await resp.json();
    } catch {
      // an answer that is not JSON: its status says enough
    }
    const message = (body && body.error) || `${path}: HTTP ${resp.status}`;
    if (resp.status === 401 && attempt < 3) {
      sessionStorage.removeItem(tokenKey);
      await askToken(message);
      continue;
    }
    if (!resp.ok) {
      throw new ApiError(resp.status, message);
    }
    return body;
  }
}

// qs builds a query string from an object, leaving out empty values.
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') u.set(k, v);
  }
  const s = u.toString();
  return s ? '?' + s : '';
}

// age formats seconds as kubectl's AGE column and kubegcd get do
// (apimachinery's HumanDuration): 91s, 2m30s, 25m, 3h5m, 20h, 3d4h, 90d,
// 2y70d, 8y. It is the one format of every age and duration the UI shows.
export function age(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return '';
  const s = Math.max(0, Math.floor(seconds));
  const parts = (a, unitA, b, unitB) => (b ? `${a}${unitA}${b}${unitB}` : `${a}${unitA}`);
  if (s < 120) return s + 's';
  const m = Math.floor(s / 60);
  if (m < 10) return parts(m, 'm', s % 60, 's');
  if (m < 180) return m + 'm';
  const hr = Math.floor(s / 3600);
  if (hr < 8) return parts(hr, 'h', m % 60, 'm');
  if (hr < 48) return hr + 'h';
  const d = Math.floor(hr / 24);
  if (hr < 24 * 8) return parts(d, 'd', hr % 24, 'h');
  if (hr < 24 * 365 * 2) return d + 'd';
  if (hr < 24 * 365 * 8) return parts(Math.floor(d / 365), 'y', d % 365, 'd');
  return Math.floor(d / 365) + 'y';
}

// goSeconds reads a Go duration as the API writes it (1h2m3s, 5m0s, 1.5s)
// into seconds: NaN for anything else.
export function goSeconds(text) {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(\d+(?:\.\d+)?)s$/.exec(text || '');
  return m ? Number(m[1] || 0) * 3600 + Number(m[2] || 0) * 60 + Number(m[3]) : NaN;
}

// A Go duration standing as a word of the API's text: after a space or a
// parenthesis, before a space, a punctuation mark or the end.
const goDurationWord = /(^|[\s(])((?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?s)(?=$|[\s).,;:])/g;

// sameAges writes the Go durations of the API's words ("asked to be
// deleted 1m31s ago") as age does, so that a sentence and the line above it
// agree ("91s ago").
function sameAges(text) {
  return text.replace(goDurationWord, (all, before, d) => before + age(goSeconds(d)));
}

export function secondsSince(iso) {
  return (Date.now() - Date.parse(iso)) / 1000;
}

// when shows a time as its age, with the exact time on hover.
export function when(iso) {
  if (!iso) return h('span', { class: 'muted', text: '—' });
  const s = secondsSince(iso);
  return h('time', { datetime: iso, title: iso, text: s >= 0 ? age(s) + ' ago' : 'in ' + age(-s) });
}

// targetText names an object as kubectl users read it.
export function targetText(t) {
  if (!t) return '';
  return `${t.kind} ${t.namespace ? t.namespace + '/' : ''}${t.name}`;
}

// objLink links to an object's page.
export function objLink(t) {
  if (!t || !t.uid) return h('span', { text: targetText(t) });
  return h('a', { href: '#/objects/' + encodeURIComponent(t.uid), text: targetText(t), title: 'uid ' + t.uid });
}

// table renders rows with columns [{title, cell(row) → node|string, class}].
export function table(columns, rows, opts = {}) {
  const head = h('tr', {}, columns.map((c) => h('th', { class: c.class, scope: 'col', text: c.title })));
  // data-label names each cell's column where a phone shows rows as cards.
  const body = h('tbody', {}, rows.map((r) => h('tr', {}, columns.map((c) => h('td', { class: c.class, dataset: { label: c.title } }, c.cell(r))))));
  if (rows.length === 0) {
    body.append(h('tr', {}, h('td', { class: 'muted', colSpan: columns.length, text: opts.empty || 'none' })));
  }
  return h('div', { class: 'tablewrap' }, h('table', { id: opts.id }, h('thead', {}, head), body));
}

// filterForm renders inputs for fields [{name, label, options?, labels?,
// placeholder?}] filled from values (labels names a select's options, ''
// its default, "any" unless named); submit calls onSubmit with the
// non-empty values.
export function filterForm(fields, values, onSubmit) {
  const inputs = {};
  const form = h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    const out = {};
    for (const [k, el] of Object.entries(inputs)) {
      const v = el.value.trim();
      if (v) out[k] = v;
    }
    onSubmit(out);
  } });
  for (const f of fields) {
    let el;
    if (f.options) {
      const text = (o) => (f.labels && f.labels[o]) || o || 'any';
      el = h('select', { name: f.name }, h('option', { value: '', text: text('') }),
        f.options.map((o) => h('option', { value: o, text: text(o) })));
    } else {
      el = h('input', { name: f.name, type: f.type || 'text', placeholder: f.placeholder || '', spellcheck: 'false' });
    }
    el.value = values.get(f.name) || '';
    inputs[f.name] = el;
    form.append(h('label', {}, f.label, el));
  }
  form.append(h('button', { type: 'submit', class: 'primary', text: 'Apply' }));
  form.append(h('button', { type: 'button', text: 'Clear', onclick: () => onSubmit({}) }));
  return form;
}

// errorBox shows a failed request in one line.
export function errorBox(err) {
  return h('div', { class: 'error', role: 'alert', text: err && err.message ? err.message : String(err) });
}

// csv renders rows as RFC 4180 CSV with columns [{title, value(row)}].
export function csv(columns, rows) {
  const esc = (v) => {
    const s = v === undefined || v === null ? '' : String(v);
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  const lines = [columns.map((c) => esc(c.title)).join(',')];
  for (const r of rows) lines.push(columns.map((c) => esc(c.value(r))).join(','));
  return lines.join('\r\n') + '\r\n';
}

// download saves text as a file.
export function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// badge is a small coloured label.
export function badge(text, kind) {
  return h('span', { class: 'badge' + (kind ? ' ' + kind : ''), text });
}

// go opens a route with query parameters, leaving out empty ones.
export function go(path, params) {
  location.hash = '#' + path + qs(params);
}

// paramsObject picks the named, non-empty parameters of a route.
export function paramsObject(params, names) {
  const out = {};
  for (const n of names) if (params.get(n)) out[n] = params.get(n);
  return out;
}

// setTitle names the page in the tab.
export function setTitle(s) {
  document.title = s ? s + ' · kubegcd' : 'kubegcd';
}

// The UI is served offline; the rules' explanations are in the project's
// docs/rules.md, read where the project publishes it.
const rulesDoc = 'https://github.com/kubegcd/kubegcd/blob/main/docs/rules.md';

// ruleLink links a rule id to its entry in docs/rules.md, its one-line
// title on hover; an id the UI does not know stays plain.
export function ruleLink(id) {
  const r = rules[id];
  if (!r) return h('code', { text: id });
  return h('a', { class: 'rule', href: rulesDoc + '#' + r.anchor, title: id + ': ' + r.title, target: '_blank', rel: 'noopener',
    dataset: { rule: id } }, h('code', { text: id }));
}

// linkRules returns the API's words, a reason or an explanation, for the
// page: each rule id in it linked by ruleLink, each duration written as age
// writes one.
export function linkRules(text) {
  return String(text ?? '').split(/\b((?:BR|KG)-[0-9A-Z]+-[0-9]+)\b/)
    .map((part, i) => (i % 2 === 1 && rules[part] ? ruleLink(part) : sameAges(part))).filter((part) => part !== '');
}

// ruleHref is the Rules page with one cleanup rule chosen.
export function ruleHref(id) {
  return '#/rules' + qs({ rule: id });
}

// decisionRule links the rule of a pending or audit row: a cleanup rule's
// id (controller rules) to the Rules page, a controller's rule id to its
// entry in docs/rules.md.
export function decisionRule(row) {
  if (row.controller === 'rules' && row.rule) return h('a', { href: ruleHref(row.rule), title: 'the cleanup rule ' + row.rule }, h('code', { text: row.rule }));
  return ruleLink(row.rule);
}
