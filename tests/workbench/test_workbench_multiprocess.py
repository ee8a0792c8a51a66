"""Two kernels, one data directory, through the whole Workbench (FTS5 in SQLite + ChromaDB + corpus).

``test_vectors_multiprocess`` covers the Chroma store alone; this drives two real processes that
each open a ``Workbench`` on the same directory and search at the same time, while one saves a note
that the other must then find after its next sync, with no hang and no "database is locked".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from zocrates_nb.workbench.core import Workbench

    role, data, flag = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    wb = Workbench(data)
    out = {"role": role, "searches": 0}
    if role == "saver":
        for i in range(8):
            wb.search(f"cell-type deconvolution of Visium spots {i}", k=5); out["searches"] += 1
        saved = wb.save_note("Quokka protocol for the two-kernel check",
                             "The quokka protocol: two kernels share one data directory.",
                             collection_key=wb.collections()[0].key)
        tmp = flag.with_suffix(".tmp")          # the handshake is atomic: never an empty flag file
        tmp.write_text(saved.key)
        tmp.rename(flag)
        for i in range(8):
            wb.search(f"batch integration {i}", k=5); out["searches"] += 1
        out["saved"] = saved.key
    else:
        while not flag.exists():
            wb.search("spatial transcriptomics", k=5); out["searches"] += 1
        key = flag.read_text()
        wb.sync(progress=False)
        results = wb.search("quokka protocol two kernels", k=5)
        out["key"], out["found"] = key, key in results.keys()
        out["hits"] = [[h.key, h.ranks.get("lexical"), h.ranks.get("dense")] for h in results.hits]
    wb.close()
    print(json.dumps(out))
""")


def test_two_kernels_search_and_see_each_others_saved_note(demo_home, tmp_path):
    script = tmp_path / "kernel.py"
    script.write_text(WORKER)
    flag = tmp_path / "saved-key"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    reader = subprocess.Popen(
        [sys.executable, str(script), "reader", str(demo_home), str(flag)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    saver = subprocess.Popen(
        [sys.executable, str(script), "saver", str(demo_home), str(flag)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    results = {}
    try:
        for name, proc in (("saver", saver), ("reader", reader)):
            out, err = proc.communicate(timeout=240)  # a hang fails here
            assert proc.returncode == 0, f"{name} failed:\n{err[-3000:]}"
            assert "database is locked" not in err
            results[name] = json.loads(out.strip().splitlines()[-1])
    finally:
        for proc in (saver, reader):
            if proc.poll() is None:
                proc.kill()
    assert results["saver"]["searches"] == 16 and results["reader"]["searches"] >= 1
    assert results["reader"]["found"] is True, results["reader"]
