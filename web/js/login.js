// The login form and the account in the header. The server says whether
// a login is needed (GET /api/session): without users on the server there
// is none, and the page works as it always did.

import { $, show } from './dom.js';
import { api, ApiError, setCsrfToken } from './api.js';
import { sentence } from './format.js';

export class Login {
  /** onIn(session): called once logged in (or when no login is needed). */
  constructor({ onIn, onOut }) {
    this.onIn = onIn;
    this.onOut = onOut;
    this.view = $('#login-view');
    this.form = $('#login-form');
    this.input = $('#login-token');
    this.error = $('#login-error');
    this.button = $('#login-button');
    this.account = $('#account');
    this.accountName = $('#account-name');
    this.shown = false;
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    $('#logout-button').addEventListener('click', () => this.logout());
    // any 401 from the API: the session has ended (expired, logged out in
    // another tab, or the token was replaced)
    window.addEventListener('llmbox:login-needed', () => {
      if (!this.shown) this.show('Your login has ended; log in again.');
    });
  }

  /** Asks the server; resolves once the app may start (or shows the form). */
  async start() {
    let session = null;
    try {
      session = await api.session();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        this.show('Your login has ended; log in again.');
        return;
      }
      // the server is unreachable: start anyway; the header says why
      this.onIn({ login_required: false, user: null });
      return;
    }
    if (session.login_required && !session.user) {
      this.show('');
      return;
    }
    this.enter(session);
  }

  enter(session) {
    setCsrfToken(session.csrf_token || '');
    this.shown = false;
    show(this.view, false);
    this.accountName.textContent = session.user || '';
    // "Log out" only for a cookie session: a bearer token has nothing to end
    show(this.account, Boolean(session.user && session.via === 'session'));
    this.onIn(session);
  }

  show(message) {
    this.shown = true;
    setCsrfToken('');
    show(this.account, false);
    this.onOut();
    show(this.view, true);
    this.error.textContent = message ? sentence(message) : '';
    show(this.error, Boolean(message));
    this.input.value = '';
    this.input.focus();
  }

  async submit() {
    const token = this.input.value.trim();
    if (!token) {
      this.error.textContent = 'Paste your API token first.';
      show(this.error, true);
      this.input.focus();
      return;
    }
    this.button.disabled = true;
    show(this.error, false);
    try {
      const session = await api.login(token);
      this.input.value = '';
      this.enter(session);
    } catch (e) {
      this.error.textContent = e.status === 401
        ? 'That token is not valid here. Check that it was copied whole (it starts with lbx_), or ask the operator for a new one.'
        : e.message;
      show(this.error, true);
      this.input.select();
    } finally {
      this.button.disabled = false;
    }
  }

  async logout() {
    try {
      await api.logout();
    } catch {
      // the cookie may be gone already; the form is what matters
    }
    this.show('You are logged out.');
  }
}
