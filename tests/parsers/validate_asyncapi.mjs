// Parse an AsyncAPI document with the official parser; print its diagnostics as JSON
// lines; exit 1 on any error or warning, or when it yields no document.
import { Parser } from '@asyncapi/parser';
import { readFileSync } from 'node:fs';

const { document, diagnostics } = await new Parser().parse(readFileSync(process.argv[2], 'utf8'));
const ERROR = 0, WARNING = 1;
for (const d of diagnostics) {
  console.log(JSON.stringify({ severity: d.severity, code: d.code, message: d.message, path: d.path }));
}
const bad = diagnostics.filter((d) => d.severity === ERROR || d.severity === WARNING);
process.exit(document && bad.length === 0 ? 0 : 1);
