# Stall samples of a wgmma GEMM kernel's epilogue, from an Nsight Compute source page
# (ncu -i REPORT --page source --csv --print-source sass, gzipped): the instructions
# between the consumers' last wgmma wait and the next EXIT, by stall reason and opcode.
#   usage: python3 ncu_epilogue_regions.py KERNEL-sass.csv.gz
import csv, gzip, sys, collections
rows = list(csv.reader(gzip.open(sys.argv[1], 'rt')))
hdr = rows[1]; data = rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
stalls = [h for h in hdr if h.startswith('stall_') and '(' not in h]
S = lambda r: int(r[ix['Warp Stall Sampling (All Samples)']] or 0)
total = sum(S(r) for r in data)
# epilogue: from the instruction after 'DEPBAR.LE gsb0, 0x0' to the next EXIT/BRA back
start = next(i for i, r in enumerate(data) if 'DEPBAR.LE gsb0, 0x0' in r[1])
end = next(i for i in range(start, len(data)) if 'EXIT' in data[i][1])
ep = data[start+1:end]
c = collections.Counter()
for r in ep:
    for s in stalls: c[s] += int(r[ix[s]] or 0)
n = sum(S(r) for r in ep)
print(f'epilogue region: {len(ep)} instructions, {n} samples = {100*n/total:.1f}% of all')
for s, v in c.most_common(6): print(f'   {s:22s} {v:6d} {100*v/max(n,1):5.1f}%')
ops = collections.Counter()
for r in ep: ops[r[1].split()[0] if not r[1].strip().startswith('@') else r[1].split()[1]] += S(r)
print('   by opcode:', ', '.join(f'{k} {v}' for k, v in ops.most_common(10)))
