/** A vega-lite spec drawn to SVG by vega, with no browser: the soak's chart and the benchmarks' targets picture. */
import { parse, View } from 'vega';
import { compile } from 'vega-lite';

export const vegaLiteSvg = async (spec: Record<string, unknown>): Promise<string> => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- vega-lite's TopLevelSpec type is a deep union; compile() checks the spec.
  const { spec: vega } = compile(spec as any);
  return new View(parse(vega), { renderer: 'none' }).toSVG();
};
