/**
 * The console's only assets, served by Estate itself (no CDN, nothing to build): a small stylesheet and a small
 * script that (1) listens to /console/events and re-renders the page's main region when the catalogue changes,
 * saying what changed in a live region, and (2) sends lifecycle actions as JSON with the console's action header.
 * Kept as strings in a module so the TypeScript build carries them into dist/ with no copy step.
 */
export const CONSOLE_JS = `'use strict';
(() => {
  const live = document.getElementById('live');
  const say = (text) => { if (live) live.textContent = text; };
  const typing = () => {
    const a = document.activeElement;
    return a && (a.tagName === 'INPUT' || a.tagName === 'SELECT' || a.tagName === 'TEXTAREA') && a.value !== a.defaultValue;
  };
  const refresh = async () => {
    const r = await fetch(location.href, { headers: { accept: 'text/html' }, cache: 'no-store' });
    if (!r.ok) return;
    const fresh = new DOMParser().parseFromString(await r.text(), 'text/html').getElementById('main');
    const main = document.getElementById('main');
    if (fresh && main && !typing()) {
      main.replaceWith(document.adoptNode(fresh));
      bind();
    }
  };
  const bind = () => {
    for (const form of document.querySelectorAll('form[data-action]')) {
      form.addEventListener('submit', async (e) => {
        e.preventDefault();
        const action = e.submitter ? e.submitter.value : '';
        const reason = form.elements.namedItem('reason') ? form.elements.namedItem('reason').value : '';
        // getAttribute: form.action would be the button named "action" (named form controls shadow properties).
        const r = await fetch(form.getAttribute('action'), {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-estate-console': '1' },
          body: JSON.stringify({ action, reason }),
        });
        const body = await r.json().catch(() => ({}));
        const message = r.ok ? body.result + ': ' + body.name + '@' + body.version : (body.error && body.error.message) || 'HTTP ' + r.status;
        if (r.ok) await refresh();
        say(message);
        const out = document.getElementById('action-result');
        if (out) out.textContent = message;
      });
    }
  };
  bind();
  const events = new EventSource('/console/events');
  events.addEventListener('catalogue', (ev) => {
    const d = JSON.parse(ev.data);
    say('Catalogue changed: ' + d.tools.join(', ') + ' (updated without reload)');
    void refresh();
  });
  document.documentElement.dataset.consoleReady = '1';
})();
`;

export const CONSOLE_CSS = `:root { font-family: system-ui, sans-serif; color: #1a1a1a; background: #fff; }
body { margin: 0; }
header { display: flex; gap: 1.5rem; align-items: center; padding: .5rem 1rem; background: #0b3d5c; color: #fff; }
header a { color: #fff; }
header ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
.brand { font-weight: 700; text-decoration: none; }
.who { margin-left: auto; }
main { padding: 1rem; }
#live { padding: .25rem 1rem; min-height: 1.2em; background: #fff7d6; color: #3d3000; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
.filters, .principal, .compare, .lifecycle { display: flex; flex-wrap: wrap; gap: .75rem; align-items: end; margin: .5rem 0; }
label { display: flex; flex-direction: column; font-size: .9rem; }
.status.deprecated { color: #7a4a00; } .status.retired { color: #8a0000; } .status.active { color: #0a5a0a; }
.level { font-weight: 600; } .level.major { color: #8a0000; } .level.minor { color: #0b3d5c; } .level.patch { color: #444; }
.diff pre, .definition, .text-diff { margin: 0; white-space: pre-wrap; font-size: .85rem; }
td.del { background: #ffe5e5; } td.ins { background: #e3f7e3; } td.empty { background: #f4f4f4; }
.why p { margin: 0; font-size: .85rem; }
.muted { color: #555; }
a { color: #0b4f8a; }
`;
