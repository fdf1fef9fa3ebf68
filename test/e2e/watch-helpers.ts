/** `estate watch` as a child process: its stdout lines parsed, its stderr kept, started once it says it follows. */
import { spawn, type ChildProcess } from 'node:child_process';
import { ESTATE_BIN, LineQueue, REPO_ROOT } from './helpers.ts';

export interface Watcher {
  child: ChildProcess;
  changes: LineQueue<Record<string, unknown>>;
  stderr: () => string;
  /** Every byte written to stdout so far, as text. */
  stdout: () => string;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

export const startWatch = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Watcher> => {
  const child = spawn(process.execPath, [ESTATE_BIN, 'watch', ...args], { cwd: REPO_ROOT, env: { ...process.env, ESTATE_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const changes = new LineQueue<Record<string, unknown>>();
  let stderr = '';
  let stdout = '';
  let buf = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    buf += c.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      changes.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      buf = buf.slice(nl + 1);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const following = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      if (stderr.includes('estate watch: following')) resolve();
    });
    void exited.then((code) => reject(new Error(`estate watch exited (${String(code)}) before following:\n${stderr}`)));
  });
  await following;
  return {
    child,
    changes,
    stderr: () => stderr,
    stdout: () => stdout,
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      return exited;
    },
  };
};
