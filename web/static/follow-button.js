/* <followfeed-button kind target [label api token-provider signin-url]>: see
 * README "Follow buttons". Parts: button, status. Under 10,000 bytes as served. */
(() => {
'use strict';
const TAG = 'followfeed-button';
if (!window.customElements || customElements.get(TAG)) return;
const src = document.currentScript?.src;
const ORIGIN = src ? new URL(src, location.href).origin : location.origin;
const KINDS = ['researcher', 'category', 'institution', 'paper', 'query'];
// [off, on, accessible name's verb]; a search reads as typed.
const VERBS = {
  paper: ['Follow this paper', 'Following this paper', 'Follow the paper'],
  query: ['Alert me', 'Alert on', 'Alert me of new papers matching'],
};
const MSG = {
  load: 'Could not load; select the button to retry.',
  expired: 'Your session expired; sign in again.',
  signin: 'Sign in to follow',
  config: 'Misconfigured follow button.',
};
const failed = verb => `Could not ${verb} right now; try again.`;
const CSS = `:host{display:inline-block;vertical-align:middle;
--_a:var(--followfeed-accent,#1a5fb4);--_on:var(--followfeed-on-accent,#fff);
--_bg:var(--followfeed-bg,#fff);--_hv:#e7eef9;--_mu:#5f6368;--_er:#b3261e}
:host([hidden]){display:none}
.w{display:inline-flex;flex-direction:column;align-items:flex-start}
button{font:inherit;font-size:.875em;font-weight:600;line-height:1.2;min-height:2.25em;
padding:.4em 1em;border:1px solid var(--_a);border-radius:999px;background:var(--_bg);
color:var(--_a);cursor:pointer;white-space:nowrap;font-variant-numeric:tabular-nums}
button:hover{background:var(--_hv)}
button[aria-pressed=true]{background:var(--_a);color:var(--_on)}
button:focus-visible{outline:3px solid var(--_a);outline-offset:2px}
button:disabled,button[aria-busy=true]{cursor:progress}
button:disabled{opacity:.65}
.s{font-size:.75em;color:var(--_mu);max-width:20em}
.s:not(:empty){margin-top:.25em}
.s.e{color:var(--_er)}
@media (prefers-color-scheme:dark){:host{--_a:var(--followfeed-accent,#8ab4f8);
--_on:var(--followfeed-on-accent,#0b1b33);--_bg:var(--followfeed-bg,#1f1f1f);
--_hv:#28334a;--_mu:#bdc1c6;--_er:#f2b8b5}}
@media (forced-colors:active){button[aria-pressed=true]{border-width:3px}}
@media (prefers-reduced-motion:no-preference){button{transition:background .15s,color .15s}}`;
let sheet;
const nf = new Intl.NumberFormat();

// The detail of an RFC 9457 problem body, or ''.
const problem = async (res) => {
  try {
    const p = /json/i.test(res.headers.get('Content-Type')) && await res.json();
    return typeof p?.detail === 'string' ? p.detail.trim() : '';
  } catch {
    return '';
  }
};

const el = (root, tag, cls, attrs) => {
  const e = root.appendChild(document.createElement(tag));
  e.className = cls;
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
};

class FollowfeedButton extends HTMLElement {
  static observedAttributes = ['kind', 'target', 'label', 'token-provider', 'api'];

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    if (!sheet) (sheet = new CSSStyleSheet()).replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
    const w = el(root, 'div', 'w');
    // The status line describes the button.
    this._b = el(w, 'button', 'b', { type: 'button', part: 'button', 'aria-describedby': 's' });
    this._s = el(w, 'div', 's', { id: 's', part: 'status', role: 'status', 'aria-live': 'polite' });
    this._b.onclick = () => this._click();
    this._st = { loading: true, followers: null, name: '' };
    this._gen = 0;
    this._render();
  }

  get following() { return !!this._st.following; }
  get followers() { return this._st.followers; }
  connectedCallback() { this.refresh(); }
  disconnectedCallback() { this._gen++; this._ac?.abort(); }

  attributeChangedCallback(name, old, val) {
    if (old === val || !this.isConnected) return;
    if (name === 'label') return this._render();
    if (this._queued) return; // one reload for several changes
    this._queued = true;
    queueMicrotask(() => {
      this._queued = false;
      if (this.isConnected) this.refresh();
    });
  }

  _a(name) { return this.getAttribute(name) || ''; }

  async _token() {
    let owner, fn = window;
    for (const k of (this._a('token-provider') || 'followfeedToken').split('.')) {
      owner = fn;
      fn = fn?.[k];
    }
    try {
      const tok = await (typeof fn === 'function' ? fn.call(owner) : fn);
      return typeof tok === 'string' && tok ? tok : null;
    } catch {
      return null;
    }
  }

  _api() { return (this._a('api') || ORIGIN).replace(/\/+$/, ''); }

  _req(method, path, token) {
    const headers = { Accept: 'application/json', ...token && { Authorization: `Bearer ${token}` } };
    return fetch(`${this._api()}/v1/${path}/${this._a('kind')}/${encodeURIComponent(this._a('target'))}`,
      { method, headers, signal: this._ac.signal, credentials: 'omit', cache: 'no-store' });
  }

  async refresh() {
    const gen = ++this._gen;
    this._ac?.abort();
    this._ac = new AbortController();
    this._busy = false;
    const st = this._st;
    Object.assign(st, { loading: true, failed: false, signedIn: false, following: false, followers: null });
    this._status('');
    let msg = '';
    if (!KINDS.includes(this._a('kind')) || !this._a('target')) {
      st.failed = true;
      msg = MSG.config;
    } else {
      this._render();
      const token = await this._token();
      if (gen !== this._gen) return;
      try {
        const res = await this._req('GET', 'follows', token);
        if (res.status === 401 && token) msg = MSG.expired;
        else if (!res.ok) {
          st.failed = true;
          msg = (await problem(res)) || MSG.load;
        } else {
          this._apply(await res.json());
          st.signedIn = !!token;
        }
      } catch {
        st.failed = true;
        msg = await this._lost(MSG.load);
      }
      if (gen !== this._gen) return;
    }
    st.loading = false;
    this._render();
    this._status(msg);
  }

  _apply(d) {
    const st = this._st;
    if (typeof d?.followers === 'number') st.followers = d.followers_hidden ? null : Math.max(0, d.followers);
    if (typeof d?.following === 'boolean') st.following = d.following;
    if (typeof d?.name === 'string') st.name = d.name;
  }

  async _click() {
    const st = this._st;
    if (st.loading || this._busy) return;
    if (st.failed) return this.refresh();
    if (!st.signedIn) return this._signin();

    // Optimistic: show the change now, roll back on failure.
    const gen = this._gen;
    const prev = { following: st.following, followers: st.followers };
    const next = !st.following;
    this._busy = true;
    st.following = next;
    if (st.followers !== null) st.followers = Math.max(0, st.followers + (next ? 1 : -1));
    this._status('');
    this._render();

    const fail = failed(next ? 'follow' : 'unfollow');
    let msg = MSG.expired;
    const token = await this._token();
    if (token) {
      try {
        const res = await this._req(next ? 'PUT' : 'DELETE', 'me/follows', token);
        if (res.status !== 401) msg = res.ok ? '' : (await problem(res)) || fail;
      } catch {
        msg = await this._lost(fail);
      }
    }
    if (gen !== this._gen) return;
    if (msg) {
      Object.assign(st, prev);
      if (msg === MSG.expired) st.signedIn = false;
    } else {
      // Re-read the true count; on failure keep the optimistic one.
      try {
        const res = await this._req('GET', 'follows', token);
        if (res.ok) this._apply(await res.json());
      } catch {} // the change itself succeeded
      if (gen !== this._gen) return;
    }
    this._busy = false;
    this._render();
    this._status(msg);
    if (msg) return;
    const detail = { kind: this._a('kind'), target: this._a('target'), following: st.following, followers: st.followers };
    this.dispatchEvent(new CustomEvent('followfeed:change', { bubbles: true, composed: true, detail }));
  }

  // msg, or if an opaque no-cors probe gets through, that the browser
  // withheld the answer (origin not in CORS_ORIGINS).
  async _lost(msg) {
    const api = this._api();
    if (new URL(api, location.href).origin === location.origin) return msg;
    try {
      await fetch(api + '/healthz', { mode: 'no-cors', cache: 'no-store', signal: this._ac.signal });
    } catch {
      return msg;
    }
    return `This site (${location.origin}) is not allowed to use followfeed's Follow button: add it to CORS_ORIGINS.`;
  }

  _signin() {
    try {
      const u = new URL(this._a('signin-url'), location.href);
      if (this._a('signin-url') && /^https?:$/.test(u.protocol)) {
        u.searchParams.set('return', location.href);
        return location.assign(u.href);
      }
    } catch {} // a bad URL gets the message
    this._status(MSG.signin);
  }

  // Every message is an error but the sign-in hint.
  _status(text) {
    this._s.textContent = text;
    this._s.classList.toggle('e', !!text && text !== MSG.signin);
  }

  _render() {
    const st = this._st;
    const b = this._b;
    const n = st.followers;
    const kind = this._a('kind');
    const verbs = VERBS[kind] || ['Follow', 'Following'];
    const on = !!(st.signedIn && st.following);
    const verb = verbs[+on];
    b.disabled = st.loading;
    // Busy while a click is sent too.
    if (st.loading || this._busy) b.setAttribute('aria-busy', 'true');
    else b.removeAttribute('aria-busy');
    b.setAttribute('aria-pressed', String(on));
    b.textContent = st.loading || n === null ? verb : `${verb} · ${nf.format(n)}`;
    const name = this._a('label') || (kind !== 'query' && st.name) || this._a('target');
    const followers = n === null ? '' : ` (${nf.format(n)} follower${n === 1 ? '' : 's'})`;
    // The name stays put; aria-pressed tells the state.
    b.setAttribute('aria-label', `${verbs[2] || verbs[0]} ${name}${followers}`);
  }
}

customElements.define(TAG, FollowfeedButton);
})();
