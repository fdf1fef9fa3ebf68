/** HTML building blocks of the console: escaping (everything from the catalogue is untrusted text) and the page shell. */
import { visible } from '#domain/visible-text';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for element content and double- or single-quoted attributes. */
export const esc = (s: unknown): string => String(s).replace(/[&<>"']/g, (c) => ESCAPES[c] as string);

/** A trusted fragment: only made by `html` below, so untrusted text is escaped exactly once. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Part = Html | string | number | null | undefined | false | readonly Part[];

const render = (p: Part): string => {
  if (p === null || p === undefined || p === false) return '';
  if (p instanceof Html) return p.text;
  if (Array.isArray(p)) return (p as readonly Part[]).map(render).join('');
  return esc(typeof p === 'string' ? visible(p) : p);
};

/**
 * Tagged template: interpolated values are escaped unless they are Html. A string's hidden characters (controls,
 * zero-width and bidirectional formatting, tag characters: #domain/visible-text) are written out as `\u{XXXX}` first,
 * as the CLI writes them: a description's instructions in tag characters, which a model reads and a person does not
 * see, or a subject `nimda\u{202E}` shown as another, reached the page as they were. Text that is JSON is given as
 * jsonVisible's (`\uXXXX` escapes, the same value to a parser), which this leaves as it is.
 */
export const html = (strings: TemplateStringsArray, ...values: Part[]): Html => {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i] as Part) + (strings[i + 1] ?? '');
  return new Html(out);
};

/**
 * A value the viewer typed, echoed into a form field (`value="..."`): escaped for HTML only, not written out, so that
 * sending the form again sends what was typed (a search for a word with a zero-width joiner in it finds it again).
 */
export const typed = (s: string): Html => new Html(esc(s));

/** Encodes one path segment of a console URL. */
export const seg = (s: string): string => encodeURIComponent(s);

export const NAV: readonly { href: string; label: string }[] = [
  { href: '/console/', label: 'Catalogue' },
  { href: '/console/principal', label: 'Try a principal' },
  { href: '/console/runs', label: 'Runs' },
  { href: '/console/upstreams', label: 'Upstreams' },
];

/** A decoded path segment: printable, bounded; anything else is simply not found (null). */
export const decodeSegment = (s: string): string | null => {
  try {
    const d = decodeURIComponent(s);
    return /^[\x21-\x7e]{1,128}$/.test(d) ? d : null;
  } catch {
    return null;
  }
};

/** What frames every page: who is looking (the header), and attributes on <body> the page script reads. */
export interface Chrome {
  who: Html;
  body?: Record<string, string>;
}

export const page = (title: string, main: Html, chrome: Chrome): string =>
  `<!doctype html>\n${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Estate console</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body${Object.entries(chrome.body ?? {}).map(([k, v]) => html` data-${k}="${v}"`)}>
<header>
<a class="brand" href="/console/">Estate</a>
<nav aria-label="Console"><ul>${NAV.map((n) => html`<li><a href="${n.href}">${n.label}</a></li>`)}</ul></nav>
<div class="who" id="who">${chrome.who}</div>
</header>
<div id="live" role="status" aria-live="polite"></div>
<main id="main">
${main}
</main>
</body>
</html>`.text}\n`;
