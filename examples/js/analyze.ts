// A data-analysis agent as a code-mode model writes it in TypeScript: read
// a CSV from the read mount, summarise it, ask a tool about the notes, and
// write the summary into the write mount. Everything it touches is granted.
import { readFile, writeFile } from 'fs/promises';

interface Sale {
  date: string;
  region: string;
  product: string;
  units: number;
  unitPrice: number;
}

const csv: string = await readFile('/work/sales.csv', 'utf8');
const [header, ...lines] = csv.trim().split('\n');
const cols = header.split(',');
const rows: Sale[] = lines.map((line) => {
  const f = Object.fromEntries(line.split(',').map((v, i) => [cols[i], v]));
  return { date: f.date, region: f.region, product: f.product, units: Number(f.units), unitPrice: Number(f.unit_price) };
});

const round = (x: number) => Math.round(x * 100) / 100;
const byRegion = new Map<string, number>();
const units = new Map<string, number>();
for (const r of rows) {
  byRegion.set(r.region, (byRegion.get(r.region) ?? 0) + r.units * r.unitPrice);
  units.set(r.product, (units.get(r.product) ?? 0) + r.units);
}
const total = [...byRegion.values()].reduce((a, b) => a + b, 0);
const top = [...units.entries()].sort((a, b) => b[1] - a[1])[0][0];

// A granted tool, called as a function: its output is wc's count.
const notes = await readFile('/work/notes.txt', 'utf8');
const words = Number(String(await tools.word_count(notes)).trim());

const summary = {
  rows: rows.length,
  first_day: rows.map((r) => r.date).sort()[0],
  last_day: rows.map((r) => r.date).sort().at(-1),
  revenue_total: round(total),
  revenue_by_region: Object.fromEntries([...byRegion].sort().map(([k, v]) => [k, round(v)])),
  top_product_by_units: top,
  notes_words: words,
};
await writeFile('/work/out/summary.json', JSON.stringify(summary, null, 2) + '\n');
console.log(`wrote /work/out/summary.json: ${summary.rows} rows, total ${summary.revenue_total}`);
