/** What a bus adapter logs through (pino's Logger fits); shared by the adapters so none loads another's client. */
export interface BusLog {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentBusLog: BusLog = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
