import json, re, sys
def parse(name):
    d = {}
    for part in name.split('_'):
        m = re.fullmatch(r'bm(\d+)', part)
        if m: d['block_m']=int(m[1]); continue
        m = re.fullmatch(r'bn(\d+)', part)
        if m: d['block_n']=int(m[1]); continue
        m = re.fullmatch(r'bk(\d+)', part)
        if m: d['block_k']=int(m[1]); continue
        m = re.fullmatch(r's(\d+)', part)
        if m: d['stages']=int(m[1]); continue
        m = re.fullmatch(r'w(\d+)x(\d+)', part)
        if m: d['warps_m']=int(m[1]); d['warps_n']=int(m[2]); continue
        m = re.fullmatch(r'g(\d+)', part)
        if m: d['group_m']=int(m[1]); continue
        m = re.fullmatch(r'k(\d+)', part)
        if m: d['split_k']=int(m[1]); continue
        m = re.fullmatch(r'c(\d+)', part)
        if m: d['cluster_m']=int(m[1]); continue
        if part=='t': d['tma_store']=1; continue
        if part=='th': d['tma_store']=2; continue
        if part=='tq': d['tma_store']=4; continue
        if part=='p': d['pingpong']=1; continue
        raise SystemExit('bad part '+part+' in '+name)
    d.setdefault('tma_store',0)
    return d
out=[]
for line in open(sys.argv[1]):
    line=line.strip()
    if not line: continue
    spec,fmt,m,n,k,names=line.split('|')
    out.append(dict(spec=spec,fmt=fmt,m=int(m),n=int(n),k=int(k),configs=[parse(x) for x in names.split()]))
json.dump(out,open(sys.argv[2],'w'),indent=1)
