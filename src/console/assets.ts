/**
 * The console's assets, served by Estate itself (no CDN, nothing to build): the stylesheet, and the script of
 * ./client-script.ts. Kept as strings in modules so the TypeScript build carries them into dist/ with no copy step.
 */
import { CONSOLE_JS } from './client-script.ts';

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
.who button, main button { font: inherit; }
.text-diff span { display: block; min-height: 1.2em; } .text-diff .ins { background: #e3f7e3; } .text-diff .del { background: #ffe5e5; }
.facts { list-style: none; padding: 0; }
.drift { border-left: 3px solid #0b3d5c; padding-left: .75rem; margin: 1rem 0; }
.newer-waiting { background: #fff4d6; padding: .4rem .6rem; }
.refused { background: #fbeaea; padding: .4rem .6rem; margin: .5rem 0; } .refused summary { cursor: pointer; }
a { color: #0b4f8a; }
`;

export const CONSOLE_ASSETS: Record<string, { type: string; text: string }> = {
  'console.js': { type: 'text/javascript; charset=utf-8', text: CONSOLE_JS },
  'console.css': { type: 'text/css; charset=utf-8', text: CONSOLE_CSS },
};
