/**
 * Which version a tools/call runs (SPEC §3 "version pinning"). Every way of not finding one — unknown name, a version
 * the caller may not see, a pinned version that is missing or retired, a handler not bound here — ends in the same
 * `Unknown tool` error, so the answer never reveals whether an unentitled tool exists.
 */
import { isVisible } from '#domain/access';
import type { Principal } from '#domain/types';
import type { CatalogueReader } from '#app/catalogue-reader';
import type { CatalogueVersion } from '#projections/catalogue';
import { findInView } from '#projections/discovery';
import { unknownTool } from './error-map.ts';

export interface ResolveRequest {
  name: string;
  principal: Principal;
  /** `params._meta["io.estate/version"]`. */
  pinned?: string;
  /** The version the session's last tools/list showed for this name, if any. */
  listed?: string;
}

export const resolveCallable = (
  reader: CatalogueReader,
  isOffered: (v: CatalogueVersion) => boolean,
  req: ResolveRequest,
): CatalogueVersion => {
  const exact = req.pinned ?? req.listed;
  if (exact !== undefined) {
    const v = reader.catalogue.resolve(req.name, exact);
    if (v && isVisible(v.access, req.principal) && isOffered(v)) return v;
    throw unknownTool(req.name);
  }
  const entries = reader.discovery.view(req.principal, false).entries;
  const v = findInView(entries, req.name);
  if (!v) throw unknownTool(req.name);
  return v;
};
