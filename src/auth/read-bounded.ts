/**
 * A fetched body read with a bound, for what Estate fetches from an issuer (its metadata, its key set): an issuer is
 * not trusted to answer in kilobytes.
 */

/** The body as text, or null (and the rest unread) once it passes `max` bytes. A body that breaks off throws. */
export const readBounded = async (res: Response, max: number): Promise<string | null> => {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) return null; // leaving the loop cancels the rest of the body
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
};
