/**
 * The tools/call and request series (src/ops/metrics.ts) count per label set, and the duration histogram's count, sum
 * and buckets follow the observations, among many other series.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '#ops/metrics';

const line = (body: string, prefix: string): string | undefined => body.split('\n').find((l) => l.startsWith(prefix));

describe('metrics series', () => {
  it('counts each label set apart, among many series', async () => {
    const m = createMetrics({ catalogue: () => ({ size: 0, position: null }) });
    m.toolCall({ tool: 'payments.lookup', version: '1.0.0', outcome: 'ok', seconds: 0.002 });
    m.toolCall({ tool: 'payments.lookup', version: '1.0.0', outcome: 'ok', seconds: 0.004 });
    m.toolCall({ tool: 'payments.lookup', version: '1.0.0', outcome: 'timeout', seconds: 30 });
    m.request('tools/call', '2025-11-25', 'ok');
    for (let i = 0; i < 10_050; i++) m.toolCall({ tool: `t${i}`, version: '1.0.0', outcome: 'ok', seconds: 0.001 });
    m.toolCall({ tool: 'payments.lookup', version: '1.0.0', outcome: 'ok', seconds: 0.003 });
    m.request('tools/call', '2025-11-25', 'ok');
    const { body } = await m.render();
    expect(line(body, 'estate_tool_calls_total{tool="payments.lookup",version="1.0.0",outcome="ok"}')).toMatch(/ 3$/);
    expect(line(body, 'estate_tool_calls_total{tool="payments.lookup",version="1.0.0",outcome="timeout"}')).toMatch(/ 1$/);
    expect(line(body, 'estate_tool_call_duration_seconds_count{tool="payments.lookup",version="1.0.0",outcome="ok"}')).toMatch(/ 3$/);
    expect(Number(line(body, 'estate_tool_call_duration_seconds_sum{tool="payments.lookup",version="1.0.0",outcome="ok"}')?.split(' ')[1])).toBeCloseTo(0.009, 9);
    expect(line(body, 'estate_tool_call_duration_seconds_bucket{le="0.005",tool="payments.lookup",version="1.0.0",outcome="ok"}')).toMatch(/ 3$/);
    expect(line(body, 'estate_tool_calls_total{tool="t10049",version="1.0.0",outcome="ok"}')).toMatch(/ 1$/);
    expect(line(body, 'estate_mcp_requests_total{method="tools/call",revision="2025-11-25",outcome="ok"}')).toMatch(/ 2$/);
  });

  // SPEC §9: requests and tool calls are counted, tool-call durations are a histogram. These three series are Estate's
  // own objects (src/ops/call-series.ts), so the types Prometheus reads are pinned here, not left to prom-client.
  it('declares the call-path series as counters and a histogram, with their help', async () => {
    const m = createMetrics({ catalogue: () => ({ size: 0, position: null }) });
    const { body } = await m.render();
    expect(body).toContain('# TYPE estate_mcp_requests_total counter');
    expect(body).toContain('# TYPE estate_tool_calls_total counter');
    expect(body).toContain('# TYPE estate_tool_call_duration_seconds histogram');
    expect(body).toMatch(/^# HELP estate_tool_call_duration_seconds tools\/call duration .+$/m);
    m.toolCall({ tool: 'payments.lookup', version: '1.0.0', outcome: 'ok', seconds: 0.002 });
    const after = (await m.render()).body;
    expect(line(after, 'estate_tool_call_duration_seconds_bucket{le="+Inf",tool="payments.lookup",version="1.0.0",outcome="ok"}')).toMatch(/ 1$/);
    expect(line(after, 'estate_tool_call_duration_seconds_bucket{le="0.001",tool="payments.lookup",version="1.0.0",outcome="ok"}')).toMatch(/ 0$/);
  });
});
