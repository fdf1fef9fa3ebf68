/** The pages of signing in and out (with authorization configured); none shows anything of the catalogue. */
import { html, type Html } from './html.ts';

export const whoOperator = (by: string): Html => html`local operator: ${by}`;
export const whoSignedIn = (by: string): Html => html`signed in as <strong>${by}</strong> <button type="button" data-sign-out>Sign out</button>`;
export const whoSignedOut: Html = html`signed out`;

const signInButton = (label: string): Html => html`<button type="button" data-sign-in>${label}</button>`;

export const signInPage = (issuer: string): Html =>
  html`<h1>Sign in</h1><p id="signed-out">This console is for people signed in at <code>${issuer}</code>. Signing in takes you there and back; the access token is kept in this page's memory only, so reloading the page or closing it signs you out.</p>${signInButton('Sign in')}`;

/** A token refused (forged, expired, for another resource) or lacking the scope to read: the reason, and a way back in. */
export const signedOutPage = (reason: string, title = 'Signed out'): Html =>
  html`<h1>${title}</h1><p id="signed-out-reason">${reason}</p>${signInButton('Sign in again')}`;

export const cannotSignInPage = (reason: string): Html =>
  html`<h1>Sign-in unavailable</h1><p id="signed-out-reason">The console cannot sign anyone in right now: ${reason}</p><p>Reload the page to try again.</p>`;
