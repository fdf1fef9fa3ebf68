/**
 * On stdio, stdout carries protocol only. Handler code that prints (console.log, process.stdout.write) would corrupt
 * the stream, so every such write is redirected to stderr and the transport keeps the one real writer to itself.
 */
let taken = false;

/** Whether stdout carries protocol in this process (a stdio server took it). */
export const stdoutTaken = (): boolean => taken;

export const takeStdout = (): ((frame: string) => void) => {
  taken = true;
  const realWrite = process.stdout.write.bind(process.stdout) as (s: string) => boolean;
  const toStderr = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) =>
    (toStderr as (...a: unknown[]) => boolean)(chunk, ...rest)) as typeof process.stdout.write;
  return (frame) => {
    realWrite(frame);
  };
};
