import csv, sys
for path in sys.argv[1:]:
    try: rows = list(csv.DictReader(open(path)))
    except Exception as e: print(path, e); continue
    ok = [r for r in rows if r["status"] in ("ok",)]
    bad = [r for r in rows if r["status"] not in ("ok", "stopped early", "stopped_early", "over budget", "over_budget")]
    print(f"== {path}: {len(rows)} rows, {len(ok)} ok, statuses:", sorted(set(r['status'] for r in rows)))
    for r in bad[:5]: print("  BAD", r["config"], r["status"], r["detail"][:150])
    for r in sorted(ok, key=lambda r: float(r["median_ms"]))[:6]: print("  ", r["config"], "%.4f ms" % float(r["median_ms"]), r["detail"][:40])
    best_d = [r for r in ok if "dequant_wgmma" in r["config"]]
    if best_d: r = min(best_d, key=lambda r: float(r["median_ms"])); print("  best dequant_wgmma", r["config"], "%.4f" % float(r["median_ms"]))
