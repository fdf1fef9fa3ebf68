// The package `imports` aliases (#domain/..., #app/..., #config): declared for every room, resolved to the same module
// as a relative path by vitest and by tsx, and written by the build as relative `.js` paths that need no alias.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { aliasTarget, rewriteAliases } from '../../scripts/alias-paths.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const imports = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { imports: Record<string, string> }).imports;

describe('package imports aliases', () => {
  it('name one for every folder under src/, and each points at sources that exist', () => {
    const rooms = readdirSync(`${root}src`, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    for (const room of rooms) expect(imports[`#${room}/*`], room).toBe(`./src/${room}/*.ts`);
    for (const target of Object.values(imports)) expect(existsSync(`${root}${target.replace(/\*\.ts$/, '')}`), target).toBe(true);
  });

  it('resolve in vitest to the very module a relative path loads', async () => {
    const viaAlias = await import('#app/ports');
    const viaPath = await import('#app/ports');
    expect(viaAlias).toBe(viaPath);
    expect((await import('#projections/catalogue')).CatalogueProjection).toBeTypeOf('function');
  });

  it('resolve under tsx (node --import tsx), as the bench and a source run use them', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', "const m = await import('#domain/semver'); console.log(typeof m.parseVersion)"], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('function');
  });

  it('are written into dist/ as relative .js paths, in code and declarations alike', () => {
    expect(aliasTarget(imports, '#domain/semver')).toBe('./src/domain/semver.ts');
    expect(aliasTarget(imports, '#config')).toBe('./src/config.ts');
    expect(rewriteAliases(imports, 'dist/src/store/postgres-rows.js', "import { ConcurrencyError } from '#app/ports';"))
      .toBe("import { ConcurrencyError } from '../app/ports.js';");
    expect(rewriteAliases(imports, 'dist/src/app/x.d.ts', 'export type T = import("#projections/catalogue").Catalogue;'))
      .toBe('export type T = import("../../projections/catalogue.js").Catalogue;');
    expect(rewriteAliases(imports, 'dist/src/cli/run.js', "const { openEstate } = await import('#compose/estate');"))
      .toBe("const { openEstate } = await import('../compose/estate.js');");
    // A string that only looks like a fragment is left alone.
    expect(rewriteAliases(imports, 'dist/src/x.js', "const ref = '#/$defs/a';")).toBe("const ref = '#/$defs/a';");
  });

  it('refuse a specifier no alias declares, rather than emit one Node cannot load', () => {
    expect(() => aliasTarget(imports, '#nowhere/x')).toThrow(/no package import matches #nowhere\/x/);
  });
});
