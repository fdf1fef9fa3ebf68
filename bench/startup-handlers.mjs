// Handlers for bench/startup.ts: `<ns>.lookup` for every namespace of the replay store (bench/replay-store.ts), so a
// server on it serves every version. Each answers with the reference it was given.
const NAMESPACES = 250;
const lookup = async (args) => ({ content: [{ type: 'text', text: `looked up ${String(args.reference)}` }] });
export default Object.fromEntries(Array.from({ length: NAMESPACES }, (_, i) => [`ns${i}.lookup`, lookup]));
