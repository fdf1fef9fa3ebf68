export function aliasTarget(imports: Record<string, string>, spec: string): string;
export function rewriteAliases(imports: Record<string, string>, file: string, text: string): string;
