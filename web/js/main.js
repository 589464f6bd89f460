// The UI's entry: hash routes, so that the server's own paths (the API)
// stay as they are; each route renders one page into <main>.
import { h, errorBox, setTitle } from './util.js';
import { overviewPage } from './overview.js';
import { objectPage } from './object.js';
import { pendingPage, auditPage } from './lists.js';
import { stuckPage, lintPage, leasesPage } from './diag.js';
import { mapPage } from './map.js';
import { cleanupRulesPage } from './cleanup.js';
import { initSearch } from './search.js';

const routes = [
  [/^\/$/, overviewPage],
  [/^\/objects\/([^/]+)$/, objectPage],
  [/^\/pending$/, pendingPage],
  [/^\/audit$/, auditPage],
  [/^\/stuck$/, stuckPage],
  [/^\/lint$/, lintPage],
  [/^\/rules$/, cleanupRulesPage],
  [/^\/leases$/, leasesPage],
  [/^\/map$/, mapPage],
];

// parseHash splits "#/audit?controller=ownergc" into path and parameters.
function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const i = raw.indexOf('?');
  const path = i < 0 ? raw : raw.slice(0, i);
  return { path: path || '/', params: new URLSearchParams(i < 0 ? '' : raw.slice(i + 1)) };
}

let current = 0;

async function render() {
  const { path, params } = parseHash();
  const gen = ++current;
  const main = document.getElementById('main');
  for (const a of document.querySelectorAll('nav a')) {
    const on = a.dataset.nav === path || (a.dataset.nav !== '/' && path.startsWith(a.dataset.nav));
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const view = h('div', { class: 'view' });
  main.replaceChildren(view);
  for (const [re, page] of routes) {
    const m = path.match(re);
    if (!m) continue;
    try {
      await page(view, { params, args: m.slice(1).map(decodeURIComponent), isCurrent: () => gen === current });
    } catch (err) {
      if (gen === current) view.append(errorBox(err));
    }
    // The browser tests wait for this before they look.
    view.dataset.loaded = 'true';
    return;
  }
  setTitle('not found');
  view.append(h('h1', { text: 'No such page' }), h('p', {}, h('a', { href: '#/', text: 'Overview' })));
}

window.addEventListener('hashchange', () => {
  render();
  document.getElementById('main').focus({ preventScroll: true });
});
initSearch();
render();
