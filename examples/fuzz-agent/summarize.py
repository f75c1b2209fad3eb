"""A naive summarising agent, in Python: it fetches the page named by its
argument, prints the page's first line, and follows every `more: URL` line,
so a page decides what else it fetches (the way an injected page steers a
model). `sbx_wasm::fuzz_agent` finds such a page; see "Fuzzing your agent"
in the README."""

import sys

import sbx

page = sbx.fetch(sys.argv[1]).text()
lines = page.splitlines()
print("summary:", lines[0] if lines else "(empty page)")
for line in lines:
    if line.startswith("more: "):
        link = line[len("more: "):].strip()
        try:
            print(f"more ({len(sbx.fetch(link).body)} bytes)")
        except (sbx.Denied, sbx.FetchError) as e:
            print("more:", e)
