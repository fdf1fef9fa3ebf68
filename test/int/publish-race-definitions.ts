/** Definitions for the publish race: version 1.v.0 adds optional property p<v>; the text is unique to its worker. */
export const raceDefinition = (v: number, worker: string, name = 'race.tool'): Record<string, unknown> => {
  const properties: Record<string, unknown> = { reference: { type: 'string' } };
  for (let i = 1; i <= v; i++) properties[`p${i}`] = { type: 'string', description: `added in 1.${i}.0 by worker ${worker}` };
  return {
    name,
    version: `1.${v}.0`,
    description: `race tool as published by worker ${worker}`,
    inputSchema: { type: 'object', properties, required: ['reference'] },
    access: { classification: 'internal' },
    sideEffect: 'none',
    handler: `${name.split('.')[0]}.tool`, // a handler of the tool's own namespace (handler-namespace)
  };
};
