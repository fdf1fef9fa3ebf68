/** What may be shown of a store URL: in banners, errors and logs, never its password. */

/** A store URL with any password hidden (postgres://user:secret@host → postgres://user:***@host). */
export const redactStoreUrl = (url: string): string => url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
