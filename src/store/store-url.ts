/** What may be shown of a store URL: in banners, errors and logs, never its password. */

/** A store URL with any password hidden (postgres://user:secret@host → postgres://user:***@host). */
export const redactStoreUrl = (url: string): string => url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');

/** Where a verb's store URL comes from, as an error's hint says it (`check ...`); `estate copy` says --from or --to. */
export const STORE_URL_SOURCE = '--store or ESTATE_STORE';
