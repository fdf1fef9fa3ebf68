/**
 * The handler pack for the MCP conformance suites (`estate serve --handlers test/conformance/handlers.ts`). The suites
 * call fixture tools by name and check what comes back; the definitions are in ./tools/*.yaml and are published through
 * the CLI by scripts/conformance.sh, so the suite exercises Estate's normal path: catalogue -> discovery -> validate ->
 * handler -> call record.
 *
 * Only what a handler can do through Estate's handler context (SPEC §6: principal, runId, tool, signal, log, progress,
 * elicit, sample, listRoots) is here. The test_input_required_result_* fixtures ask through the same ctx calls: on a
 * stateless 2026-07-28 call Estate turns an unanswered question into an InputRequiredResult (SEP-2322) and answers it
 * from the follow-up's inputResponses; `key` names the question as the suite expects.
 */
import type { CallToolResult, HandlerContext, HandlerMap } from '#handlers/types';

/** A 1x1 red PNG. */
export const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

/** A valid 8 kHz mono 8-bit PCM WAV of `samples` silent samples. */
export const wavBase64 = (samples = 80): string => {
  const b = Buffer.alloc(44 + samples, 0x80);
  b.write('RIFF', 0, 'ascii');
  b.writeUInt32LE(36 + samples, 4);
  b.write('WAVEfmt ', 8, 'ascii');
  b.writeUInt32LE(16, 16); // fmt chunk size
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(8000, 28); // byte rate
  b.writeUInt16LE(1, 32); // block align
  b.writeUInt16LE(8, 34); // bits per sample
  b.write('data', 36, 'ascii');
  b.writeUInt32LE(samples, 40);
  return b.toString('base64');
};

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

/** Resolves after `ms`, or rejects when the call is cancelled or times out: a handler must honour its signal. */
const pause = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

let triggerCount = 0;

/**
 * Changes the served tool list the way an operator would: a publish through Estate's command handler, on its own
 * connection to the store the server reads (ESTATE_STORE, inherited from `estate serve`), so the change reaches the
 * server only through the store's tail like any other publisher's. In-process rather than a CLI child because the 2026
 * suite listens for the notification for 1.5 s only. The new tool binds an existing handler, so it is offered.
 */
const publishNewTool = async (): Promise<string> => {
  const store = process.env.ESTATE_STORE;
  if (!store) throw new Error('ESTATE_STORE is not set: the trigger fixture needs the store the server reads');
  const [{ loadConfig }, { openEstate }, { validateDefinition }] = await Promise.all([
    import('#config'),
    import('#compose/estate'),
    import('#domain/tool-definition'),
  ]);
  // In the namespace of the handler it binds (a handler must belong to its tool's namespace).
  const name = `test_trigger_added.t${process.pid}_${Date.now()}_${++triggerCount}`;
  const estate = await openEstate(loadConfig({ store }));
  try {
    const definition = validateDefinition(
      {
        name,
        version: '1.0.0',
        description: 'Added by test_trigger_tool_change.',
        inputSchema: { type: 'object', additionalProperties: false },
        access: { requiredScopes: [], tenants: [], classification: 'public' },
        sideEffect: 'none',
        handler: 'test_trigger_added',
      },
      estate.compiler,
    );
    const outcome = await estate.commands.publish(definition, 'conformance');
    if (outcome.result !== 'published') throw new Error(`publish of ${name} answered ${outcome.result}`);
    return name;
  } finally {
    await estate.close();
  }
};

/** A refusal or failure of a request to the client, as the tool's own `isError` observation. */
const asking = async (ask: () => Promise<CallToolResult>): Promise<CallToolResult> => {
  try {
    return await ask();
  } catch (e) {
    return { content: [{ type: 'text', text: e instanceof Error ? e.message : String(e) }], isError: true };
  }
};

const elicitOf = (ctx: HandlerContext): NonNullable<HandlerContext['elicit']> => {
  if (!ctx.elicit) throw new Error('this Estate offers no ctx.elicit');
  return ctx.elicit.bind(ctx);
};

const sampleOf = (ctx: HandlerContext): NonNullable<HandlerContext['sample']> => {
  if (!ctx.sample) throw new Error('this Estate offers no ctx.sample');
  return ctx.sample.bind(ctx);
};

const rootsOf = (ctx: HandlerContext): NonNullable<HandlerContext['listRoots']> => {
  if (!ctx.listRoots) throw new Error('this Estate offers no ctx.listRoots');
  return ctx.listRoots.bind(ctx);
};

const sampledText = (r: { content: unknown }): string =>
  (Array.isArray(r.content) ? r.content : [r.content])
    .map((b: { type?: unknown; text?: unknown }) => (b.type === 'text' && typeof b.text === 'string' ? b.text : `[${String(b.type)}]`))
    .join('\n');

const ask = (message: string, field: string, type = 'string') => ({
  message,
  requestedSchema: { type: 'object', properties: { [field]: { type } }, required: [field] },
});

const completed = (r: { action: string; content?: Record<string, unknown> }): CallToolResult =>
  text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);

/** The suite's SEP-1034 schema: one default per primitive type. */
export const SEP1034_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'User name', default: 'John Doe' },
    age: { type: 'integer', description: 'User age', default: 30 },
    score: { type: 'number', description: 'User score', default: 95.5 },
    status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', description: 'Verification status', default: true },
  },
  required: [],
};

/** The suite's SEP-1330 schema: the five enum shapes. */
export const SEP1330_SCHEMA = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', description: 'Untitled single-select', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      description: 'Titled single-select',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: { type: 'string', description: 'Legacy titled enum', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
    untitledMulti: { type: 'array', description: 'Untitled multi-select', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
    titledMulti: {
      type: 'array',
      description: 'Titled multi-select',
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
  required: [],
};

export const handlers: HandlerMap = {
  test_simple_text: () => text('This is a simple text response for testing.'),
  /** What the tools test_trigger_tool_change publishes are bound to. */
  test_trigger_added: () => text('This is a simple text response for testing.'),

  test_image_content: () => ({ content: [{ type: 'image', data: PNG_1X1, mimeType: 'image/png' }] }),

  test_audio_content: () => ({ content: [{ type: 'audio', data: wavBase64(), mimeType: 'audio/wav' }] }),

  test_embedded_resource: () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }),

  test_multiple_content_types: () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG_1X1, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }),

  test_tool_with_logging: async (_args, ctx: HandlerContext) => {
    ctx.log.info('Tool execution started');
    await pause(50, ctx.signal);
    ctx.log.info('Tool processing data');
    await pause(50, ctx.signal);
    ctx.log.info('Tool execution completed');
    return text('Tool with logging executed successfully');
  },

  // The 2026 suite checks that no notifications/message reaches a client that did not ask for a log level.
  test_logging_tool: (_args, ctx: HandlerContext) => {
    ctx.log.info('test_logging_tool ran');
    return text('Logging tool executed');
  },

  // The suite asks for a thrown error: Estate turns it into an isError result, never a JSON-RPC error.
  test_error_handling: () => {
    throw new Error('This tool intentionally returns an error for testing');
  },

  // ctx.progress reaches the client only when the request carried a progressToken; otherwise it is a no-op.
  test_tool_with_progress: async (_args, ctx: HandlerContext) => {
    ctx.progress?.(0, 100);
    await pause(50, ctx.signal);
    ctx.progress?.(50, 100);
    await pause(50, ctx.signal);
    ctx.progress?.(100, 100);
    return text('Progress tool completed');
  },

  test_reconnection: async (_args, ctx: HandlerContext) => {
    await pause(100, ctx.signal);
    return text('Reconnection test completed');
  },

  test_trigger_tool_change: async () => text(`Published ${await publishNewTool()}`),

  json_schema_2020_12_tool: (args) => text(`Received: ${JSON.stringify(args)}`),

  test_sampling: (args, ctx: HandlerContext) =>
    asking(async () => {
      if (!ctx.sample) throw new Error('this Estate offers no ctx.sample');
      const r = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt) } }], maxTokens: 100 });
      const blocks = Array.isArray(r.content) ? r.content : [r.content];
      const answer = blocks.map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : `[${b.type}]`)).join('\n');
      return text(`LLM response: ${answer}`);
    }),

  // Does NOT catch the refusal: an uncaught "client did not declare sampling" is the protocol's -32021 on 2026-07-28.
  test_missing_capability: async (_args, ctx: HandlerContext) => {
    if (!ctx.sample) throw new Error('this Estate offers no ctx.sample');
    const r = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Say hello.' } }], maxTokens: 20 });
    return text(`sampled: ${JSON.stringify(r.content)}`);
  },

  test_elicitation: (args, ctx: HandlerContext) =>
    asking(async () => {
      const r = await elicitOf(ctx)({
        message: String(args.message),
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" },
          },
          required: ['username', 'email'],
        },
      });
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }),

  test_elicitation_sep1034_defaults: (_args, ctx: HandlerContext) =>
    asking(async () => completed(await elicitOf(ctx)({ message: 'Please review and update the form fields with defaults', requestedSchema: SEP1034_SCHEMA }))),

  test_elicitation_sep1330_enums: (_args, ctx: HandlerContext) =>
    asking(async () => completed(await elicitOf(ctx)({ message: 'Please select options from the enum fields', requestedSchema: SEP1330_SCHEMA }))),

  test_input_required_result_elicitation: (_args, ctx: HandlerContext) =>
    asking(async () => {
      const r = await elicitOf(ctx)(ask('What is your name?', 'name'), { key: 'user_name' });
      return text(`Hello, ${String(r.content?.name ?? 'stranger')}!`);
    }),

  // The suite checks that a stateless call's response stream carries no request of the server's own.
  test_streaming_elicitation: (_args, ctx: HandlerContext) =>
    asking(async () => {
      const r = await elicitOf(ctx)(ask('What is your name?', 'name'), { key: 'user_name' });
      return text(`Hello, ${String(r.content?.name ?? 'stranger')}!`);
    }),

  test_input_required_result_sampling: (_args, ctx: HandlerContext) =>
    asking(async () => {
      const r = await sampleOf(ctx)({ messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100 }, { key: 'capital_question' });
      return text(`The model said: ${sampledText(r)}`);
    }),

  test_input_required_result_list_roots: (_args, ctx: HandlerContext) =>
    asking(async () => {
      const r = await rootsOf(ctx)({ key: 'client_roots' });
      return text(`Roots: ${r.roots.map((x) => x.uri).join(', ')}`);
    }),

  test_input_required_result_request_state: (_args, ctx: HandlerContext) =>
    asking(async () => {
      const r = await elicitOf(ctx)(ask('Please confirm', 'ok', 'boolean'), { key: 'confirm' });
      // Reaching here on a follow-up means Estate verified the echoed requestState (or the answer came in this request).
      return text(`state-ok: confirmed=${String(r.content?.ok)}`);
    }),

  test_input_required_result_multiple_inputs: (_args, ctx: HandlerContext) =>
    asking(async () => {
      // Asked before any await: one InputRequiredResult carries all three.
      const [name, greeting, roots] = await Promise.all([
        elicitOf(ctx)(ask('What is your name?', 'name'), { key: 'user_name' }),
        sampleOf(ctx)({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 }, { key: 'greeting' }),
        rootsOf(ctx)({ key: 'client_roots' }),
      ]);
      return text(`${sampledText(greeting)} ${String(name.content?.name)} (${roots.roots.length} roots)`);
    }),

  test_input_required_result_multi_round: (_args, ctx: HandlerContext) =>
    asking(async () => {
      const name = await elicitOf(ctx)(ask('Step 1: What is your name?', 'name'), { key: 'step1' });
      const color = await elicitOf(ctx)(ask('Step 2: What is your favorite color?', 'color'), { key: 'step2' });
      return text(`${String(name.content?.name)} likes ${String(color.content?.color)}`);
    }),

  test_input_required_result_tampered_state: (_args, ctx: HandlerContext) =>
    asking(async () => {
      const r = await elicitOf(ctx)(ask('Please confirm', 'ok', 'boolean'), { key: 'confirm' });
      return text(`confirmed=${String(r.content?.ok)}`);
    }),

  test_input_required_result_capabilities: (_args, ctx: HandlerContext) =>
    asking(async () => {
      try {
        const r = await elicitOf(ctx)(ask('What is your name?', 'name'), { key: 'user_name' });
        return text(`Hello, ${String(r.content?.name)}!`);
      } catch (e) {
        // Only a refused capability falls back; an unanswered question must end the run as it is.
        if (!(e instanceof Error && 'reason' in e && e.reason === 'capability')) throw e;
      }
      const r = await sampleOf(ctx)({ messages: [{ role: 'user', content: { type: 'text', text: 'What is a good name?' } }], maxTokens: 20 }, { key: 'name_suggestion' });
      return text(`Suggested: ${sampledText(r)}`);
    }),
};

export default handlers;
