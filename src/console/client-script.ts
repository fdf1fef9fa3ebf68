/**
 * The console's one script, served by Estate (no CDN, nothing to build; a string module so `tsc` carries it into
 * dist/). What it does:
 *  - listens to /console/events (read with fetch, so it can carry a Bearer header) and, when the catalogue changes,
 *    says what changed in the live region and re-renders the page's <main> (not while the viewer is typing);
 *  - sends actions (forms marked data-action) as JSON with the console's action header;
 *  - with authorization (<body data-auth="oauth">): signs in at the issuer with the authorization code flow and PKCE
 *    (S256), keeps the access token in a variable of this closure only (never storage, never a cookie), fetches every
 *    page with it as a Bearer header (links and GET forms are followed in place, history kept), and signs out when
 *    the server refuses the token (forged, expired) or the change stream says it expired. Only the PKCE verifier and
 *    state live in sessionStorage, for the one round trip to the issuer, and are removed on return.
 */
import { HIDDEN_SOURCE } from '#domain/visible-text';

export const CONSOLE_JS = `'use strict';
(() => {
  const cfg = document.body.dataset;
  const oauth = cfg.auth === 'oauth';
  const KEY = 'estate-console-sign-in';
  let token = null;
  let stream = null;
  let retry = 1000;
  const ready = (v) => { document.documentElement.dataset.consoleReady = v; };
  // A message made of a server's or an issuer's text, hidden characters written out as the pages write them.
  const HIDDEN = new RegExp(${JSON.stringify(HIDDEN_SOURCE)}, 'gu');
  const shown = (text) => String(text).replace(HIDDEN, (c) => (c === '\\n' || c === '\\t' ? c : '\\\\u{' + c.codePointAt(0).toString(16).toUpperCase() + '}'));
  const say = (text) => { const l = document.getElementById('live'); if (l) l.textContent = shown(text); };
  const auth = (h) => (token ? Object.assign({}, h, { authorization: 'Bearer ' + token }) : h);
  const here = () => location.pathname + location.search;
  const typing = () => {
    const a = document.activeElement;
    return a && (a.tagName === 'INPUT' || a.tagName === 'SELECT' || a.tagName === 'TEXTAREA') && a.value !== a.defaultValue;
  };
  const adopt = (text, ids) => {
    const doc = new DOMParser().parseFromString(text, 'text/html');
    for (const id of ids) {
      const fresh = doc.getElementById(id);
      const cur = document.getElementById(id);
      if (fresh && cur) cur.replaceWith(document.adoptNode(fresh));
    }
    if (doc.title) document.title = doc.title;
  };
  const stopStream = () => { if (stream) stream.abort(); stream = null; };
  const signedOut = (raw) => {
    const reason = shown(raw);
    token = null;
    stopStream();
    const main = document.createElement('main');
    main.id = 'main';
    const h1 = document.createElement('h1');
    h1.textContent = 'Signed out';
    const p = document.createElement('p');
    p.id = 'signed-out-reason';
    p.textContent = reason;
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.signIn = '';
    b.textContent = 'Sign in again';
    main.append(h1, p, b);
    document.getElementById('main').replaceWith(main);
    const who = document.getElementById('who');
    if (who) who.textContent = 'signed out';
    document.title = 'Signed out · Estate console';
    say(reason);
  };
  const refusedPage = async (r) => {
    const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
    const why = doc.getElementById('signed-out-reason');
    signedOut(why ? why.textContent : 'Signed out (HTTP ' + r.status + ')');
  };
  const load = async (url, push) => {
    ready('0');
    try {
      const r = await fetch(url, { headers: auth({ accept: 'text/html' }), cache: 'no-store' });
      if (push) history.pushState(null, '', url);
      if (oauth && (r.status === 401 || r.status === 403)) return await refusedPage(r);
      adopt(await r.text(), ['main', 'who']);
      if (push) window.scrollTo(0, 0);
    } finally {
      ready('1');
    }
  };
  const refresh = async () => {
    if ((oauth && !token) || typing()) return;
    const r = await fetch(here(), { headers: auth({ accept: 'text/html' }), cache: 'no-store' });
    if (oauth && (r.status === 401 || r.status === 403)) return refusedPage(r);
    if (r.ok && !typing()) adopt(await r.text(), ['main']);
  };
  const onEvent = (block) => {
    let event = 'message';
    let data = '';
    for (const line of block.split('\\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data += line.slice(5).trim();
    }
    if (event === 'catalogue') {
      const d = JSON.parse(data);
      say('Catalogue changed: ' + d.tools.join(', ') + ' (updated without reload)');
      void refresh();
    } else if (event === 'expired') signedOut('Signed out: the token is expired. Sign in again to go on.');
  };
  const listen = async () => {
    stopStream();
    const ctl = new AbortController();
    stream = ctl;
    try {
      const r = await fetch('/console/events', { headers: auth({ accept: 'text/event-stream' }), signal: ctl.signal, cache: 'no-store' });
      if (r.status === 401 || r.status === 403) {
        const b = await r.json().catch(() => ({}));
        return signedOut((b.error && b.error.message) || 'Signed out');
      }
      if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
      retry = 1000;
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\\n\\n')) >= 0) {
          onEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    if (stream !== ctl) return;
    setTimeout(() => { if (stream === ctl) void listen(); }, retry);
    retry = Math.min(retry * 2, 30000);
  };
  const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  const random = (n) => b64url(crypto.getRandomValues(new Uint8Array(n)));
  const redirectUri = () => location.origin + '/console/callback';
  const signIn = async () => {
    const verifier = random(32);
    const challenge = b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
    const state = random(16);
    const back = location.pathname === '/console/callback' ? '/console/' : here();
    sessionStorage.setItem(KEY, JSON.stringify({ state, verifier, back }));
    const u = new URL(cfg.authorizationEndpoint);
    const q = { response_type: 'code', client_id: cfg.clientId, redirect_uri: redirectUri(), scope: cfg.scope, state, code_challenge: challenge, code_challenge_method: 'S256', resource: cfg.resource };
    for (const [k, v] of Object.entries(q)) u.searchParams.set(k, v);
    location.assign(u.toString());
  };
  const callback = async () => {
    const q = new URLSearchParams(location.search);
    const saved = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    sessionStorage.removeItem(KEY);
    history.replaceState(null, '', saved && typeof saved.back === 'string' && saved.back.startsWith('/console') ? saved.back : '/console/');
    const fail = (why) => signedOut('Sign-in failed: ' + why);
    if (q.get('error')) return fail(q.get('error') + (q.get('error_description') ? ': ' + q.get('error_description') : ''));
    if (!saved || !q.get('state') || q.get('state') !== saved.state) return fail('the answer does not belong to a sign-in started on this page (state mismatch)');
    if (q.get('iss') && q.get('iss') !== cfg.issuer) return fail('the answer comes from another issuer');
    const body = new URLSearchParams({ grant_type: 'authorization_code', code: q.get('code') || '', redirect_uri: redirectUri(), client_id: cfg.clientId, code_verifier: saved.verifier, resource: cfg.resource });
    const r = await fetch(cfg.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body, credentials: 'omit' });
    const t = await r.json().catch(() => ({}));
    if (!r.ok || typeof t.access_token !== 'string') return fail(t.error_description || t.error || 'the token endpoint answered HTTP ' + r.status);
    token = t.access_token;
    await load(here(), false);
    if (token) void listen();
  };
  const describe = (r, b) => {
    if (r.ok) return b.result === 'rejected' ? 'rejected: ' + b.tool : b.result + ': ' + b.name + '@' + b.version;
    if (b.error && b.error.message) return b.error.message;
    if (b.result === 'refused') return 'refused: ' + (b.reasons || []).map((x) => x.detail).join('; ');
    return 'HTTP ' + r.status;
  };
  const act = async (form, submitter) => {
    const fields = Object.fromEntries(new FormData(form));
    fields.action = submitter ? submitter.value : '';
    const r = await fetch(form.getAttribute('action'), { method: 'POST', headers: auth({ 'content-type': 'application/json', 'x-estate-console': '1' }), body: JSON.stringify(fields) });
    const b = await r.json().catch(() => ({}));
    const message = shown(describe(r, b));
    if (oauth && r.status === 401) return signedOut(message);
    const out = form.parentElement ? form.parentElement.querySelector('.action-result') : null;
    if (r.ok) await refresh();
    else if (out) out.textContent = message;
    say(message);
  };
  document.addEventListener('submit', (e) => {
    const form = e.target;
    if (!(form instanceof HTMLFormElement)) return;
    if (form.hasAttribute('data-action')) {
      e.preventDefault();
      void act(form, e.submitter);
    } else if (oauth && token && (form.getAttribute('method') || 'get').toLowerCase() === 'get') {
      e.preventDefault();
      const u = new URL(form.getAttribute('action') || location.pathname, location.origin);
      u.search = new URLSearchParams(new FormData(form)).toString();
      void load(u.pathname + u.search, true);
    }
  });
  document.addEventListener('click', (e) => {
    const t = e.target instanceof Element ? e.target : null;
    if (!t) return;
    if (t.closest('[data-sign-in]')) return void signIn();
    if (t.closest('[data-sign-out]')) return signedOut('You signed out: the token is gone from this page.');
    if (!oauth || !token || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = t.closest('a[href]');
    if (!a) return;
    const u = new URL(a.href, location.href);
    if (u.origin !== location.origin || !u.pathname.startsWith('/console') || u.pathname.startsWith('/console/assets/')) return;
    e.preventDefault();
    void load(u.pathname + u.search, true);
  });
  window.addEventListener('popstate', () => { if (oauth && token) void load(here(), false); });
  if (!oauth) void listen();
  else if (location.pathname === '/console/callback') {
    ready('0');
    void callback().finally(() => ready('1'));
    return;
  }
  ready('1');
})();
`;
